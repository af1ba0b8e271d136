import { randomInt } from 'node:crypto';

/**
 * The callers of the soak benchmark (bench/soak.ts): each kind makes things a caller can make
 * without limit (sandboxes, demo addresses, made-up keys, functions), every request from an address
 * of its own unless the kind is one caller, with at most `IN_FLIGHT` requests in flight.
 */
export const IN_FLIGHT = 8;

/** Answers other than the one a request expects, by kind and status, with a few bodies to read. */
export class Tally {
  readonly requests = new Map<string, number>();
  readonly unexpected = new Map<string, number>();
  readonly samples: string[] = [];

  count(kind: string): void {
    this.requests.set(kind, (this.requests.get(kind) ?? 0) + 1);
  }

  miss(kind: string, what: string, detail: string): void {
    const key = `${kind} ${what}`;
    this.unexpected.set(key, (this.unexpected.get(key) ?? 0) + 1);
    if (this.samples.length < 10) this.samples.push(`${key}: ${detail.slice(0, 300)}`);
  }
}

/** A body that is not JSON (a proxy's error page) is tallied by its status, not thrown. */
function parseJson<T>(text: string): T | null {
  try {
    return JSON.parse(text) as T;
  } catch {
    return null;
  }
}

interface Call {
  ip: string;
  headers?: Record<string, string>;
  body?: unknown;
}

// Base58 as the service's own keys use it, so a made-up key passes the format check and is looked up.
const KEY_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

export class SoakClient {
  private addresses = 0;
  private names = 0;

  constructor(
    private readonly base: string,
    readonly tally: Tally,
  ) {}

  /** A caller address no request of this run has come from (10.0.0.1 onwards; IPv4 counts whole). */
  address(): string {
    const n = ++this.addresses;
    return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
  }

  /** A name no other thing of this run has: product types, function names, emails. */
  name(prefix: string): string {
    return `${prefix}-${++this.names}`;
  }

  /** One request; an answer of another status than `expect` (or no answer) is tallied, not thrown. */
  async call<T>(kind: string, method: string, path: string, c: Call, expect: number): Promise<{ status: number; json: T | null; headers: Headers } | null> {
    this.tally.count(kind);
    try {
      const res = await fetch(`${this.base}${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': c.ip, ...c.headers },
        body: c.body === undefined ? undefined : JSON.stringify(c.body),
      });
      const text = await res.text();
      if (res.status !== expect) this.tally.miss(kind, `${method} ${path.replace(/\/fn_[^/]+/, '/{id}')} ${res.status}`, text);
      return { status: res.status, json: parseJson<T>(text), headers: res.headers };
    } catch (err) {
      this.tally.miss(kind, `${method} ${path} error`, String(err));
      return null;
    }
  }

  /** A key of a real key's shape (its prefix and length, the service's alphabet) that was never issued. */
  madeUpKey(real: string): string {
    const prefix = real.slice(0, real.lastIndexOf('_') + 1);
    let tail = '';
    for (let i = prefix.length; i < real.length; i++) tail += KEY_ALPHABET[randomInt(KEY_ALPHABET.length)] ?? '1';
    return prefix + tail;
  }
}

/** Runs `task(0..count-1)` with at most `limit` running at once. */
export async function inParallel(count: number, limit: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, lane));
}

/** A context every built-in router choice can price (cost, current price), under a product type of its own. */
function pricedContext(productType: string): Record<string, unknown> {
  return { product_type: productType, currency: 'USD', unit_cost: 1.2, target_margin: 0.6, current_price: 4.5 };
}

/**
 * A sandbox's life as an agent starts it: registration, 3 priced calls with product types of their
 * own, and a verification; all from one new address. Answers the sandbox's key.
 */
export async function sandbox(client: SoakClient, kind: string): Promise<string | null> {
  const ip = client.address();
  const reg = await client.call<{ api_key: { key: string } }>(kind, 'POST', '/api/agents/register', { ip, body: { name: client.name('soak-agent') } }, 201);
  const key = reg?.json?.api_key?.key;
  if (!key) return null;
  const types = [client.name('soak-product'), client.name('soak-product'), client.name('soak-product')];
  for (const productType of types) {
    await client.call(kind, 'POST', '/api/compute/price', { ip, headers: { 'x-api-key': key }, body: { context: pricedContext(productType) } }, 200);
  }
  const context = { product_type: types[0], currency: 'USD', unit_cost: 1.2 };
  await client.call(kind, 'POST', '/api/price-router/verify', { ip, headers: { 'x-api-key': key }, body: { context, proposed_price: '4.50' } }, 200);
  return key;
}

export async function sandboxes(client: SoakClient, kind: string, count: number): Promise<void> {
  await inParallel(count, IN_FLIGHT, async () => {
    await sandbox(client, kind);
  });
}

/** The keyless demo from new addresses, one call each: what an address's demo budget costs to keep. */
export async function demoAddresses(client: SoakClient, kind: string, count: number): Promise<void> {
  await inParallel(count, IN_FLIGHT, async () => {
    await client.call(kind, 'POST', '/api/public/compute/demo', { ip: client.address(), body: { context: pricedContext('coffee') } }, 200);
  });
}

/** Well-formed keys never issued, from new addresses, with a body of their own each: each is looked up and refused. */
export async function badKeys(client: SoakClient, kind: string, count: number, realKey: string): Promise<void> {
  await inParallel(count, IN_FLIGHT, async () => {
    const body = { context: { product_type: client.name('soak-guess'), currency: 'USD', unit_cost: randomInt(1, 10_000) / 100 } };
    await client.call(kind, 'POST', '/api/compute/price', { ip: client.address(), headers: { 'x-api-key': client.madeUpKey(realKey) }, body }, 401);
  });
}

const PASSWORD = 'correct horse battery';

/** A person signed up from a new address, and a full-access key of their workspace. */
export async function person(client: SoakClient, kind: string): Promise<{ ip: string; key: string; email: string; cookie: string } | null> {
  const ip = client.address();
  const email = `${client.name('soak-person')}@example.com`;
  const signup = await client.call(kind, 'POST', '/api/auth/signup', { ip, body: { email, password: PASSWORD, date_of_birth: '1990-01-01' } }, 201);
  const cookie = (signup?.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const created = await client.call<{ api_key: { key: string } }>(kind, 'POST', '/api/api-keys', { ip, headers: { cookie }, body: { name: 'soak' } }, 201);
  const key = created?.json?.api_key?.key;
  return key ? { ip, key, email, cookie } : null;
}

/** A key of an agent of the person's workspace: the kind of key exchanged for access tokens. */
export async function agentKey(client: SoakClient, kind: string, owner: { ip: string; cookie: string }): Promise<string | null> {
  const headers = { cookie: owner.cookie };
  const agent = await client.call<{ agent: { id: string } }>(kind, 'POST', '/api/agents', { ip: owner.ip, headers, body: { name: client.name('soak-agent') } }, 201);
  const id = agent?.json?.agent?.id;
  if (!id) return null;
  const created = await client.call<{ api_key: { key: string } }>(kind, 'POST', `/api/agents/${id}/keys`, { ip: owner.ip, headers, body: { name: 'soak tokens' } }, 201);
  return created?.json?.api_key?.key ?? null;
}

/**
 * One person signing in again and again, each time from a new address (a new browser): each sign-in is a
 * session, used once by its cookie and once by its person token, as the cached sessions are.
 */
export async function signIns(client: SoakClient, kind: string, owner: { email: string }, count: number): Promise<void> {
  await inParallel(count, IN_FLIGHT, async () => {
    const ip = client.address();
    const signin = await client.call<{ token: { access_token: string } }>(kind, 'POST', '/api/auth/signin', { ip, body: { email: owner.email, password: PASSWORD } }, 200);
    const cookie = (signin?.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const token = signin?.json?.token?.access_token;
    if (!cookie || !token) return;
    await client.call(kind, 'GET', '/api/me', { ip, headers: { cookie } }, 200);
    await client.call(kind, 'GET', '/api/me', { ip, headers: { authorization: `Bearer ${token}` } }, 200);
  });
}

/** OAuth access tokens minted from one agent key (client credentials), each used once for a priced call. */
export async function tokens(client: SoakClient, kind: string, owner: { ip: string; key: string }, count: number): Promise<void> {
  await inParallel(count, IN_FLIGHT, async () => {
    const minted = await client.call<{ access_token: string }>(kind, 'POST', '/api/oauth/token', { ip: owner.ip, headers: { 'x-api-key': owner.key }, body: { grant_type: 'client_credentials' } }, 200);
    const token = minted?.json?.access_token;
    if (!token) return;
    await client.call(kind, 'POST', '/api/compute/price', { ip: owner.ip, headers: { authorization: `Bearer ${token}` }, body: { context: pricedContext(client.name('soak-token')) } }, 200);
  });
}

/**
 * External functions of one person pointing at the loopback upstream: registered, activated and
 * called once each by id (so each is in the registry, its breaker, latency and metrics).
 */
export async function functions(client: SoakClient, kind: string, owner: { ip: string; key: string }, count: number, upstreamUrl: string): Promise<void> {
  const headers = { 'x-api-key': owner.key };
  await inParallel(count, IN_FLIGHT, async () => {
    const body = { name: client.name('soak-fn'), execution_type: 'external_api', endpoint_url: upstreamUrl, cost_per_unit: '0.001' };
    const created = await client.call<{ function: { id: string } }>(kind, 'POST', '/api/functions', { ip: owner.ip, headers, body }, 201);
    const id = created?.json?.function?.id;
    if (!id) return;
    await client.call(kind, 'PATCH', `/api/functions/${id}`, { ip: owner.ip, headers, body: { status: 'active' } }, 200);
    await client.call(kind, 'POST', '/api/compute/price', { ip: owner.ip, headers, body: { context: { product_type: 'soak-function', currency: 'USD', current_price: 10 }, function_id: id } }, 200);
  });
}
