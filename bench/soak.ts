import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ask, startChild, stopChild } from './ipc';
import { soakRedis } from './soak-redis';
import type { RedisReading } from './soak-redis';
import { SoakClient, Tally, agentKey, badKeys, demoAddresses, functions, person, sandbox, sandboxes, signIns, tokens } from './soak-traffic';

/**
 * What the service retains per thing callers create or send: heap after full collections, measured
 * after each kind of caller has been idle longer than the in-process caches' 30 s lifetimes, so
 * what is left is what the service keeps, not what it is still using. For an A/B of cache changes.
 *
 * `npm run bench:soak` (SOAK_SANDBOXES 2000, SOAK_DEMO_ADDRESSES 3000, SOAK_BAD_KEYS 3000,
 * SOAK_FUNCTIONS 200, SOAK_SIGN_INS 1000, SOAK_TOKENS 2000, SOAK_IDLE_S 35); in Redis mode (SOAK_REDIS=1, or REDIS_URL set) also what Redis
 * holds after each kind (bench/soak-redis.ts).
 */
const SANDBOXES = Number(process.env.SOAK_SANDBOXES ?? 2000);
const DEMO_ADDRESSES = Number(process.env.SOAK_DEMO_ADDRESSES ?? 3000);
const BAD_KEYS = Number(process.env.SOAK_BAD_KEYS ?? 3000);
const FUNCTIONS = Number(process.env.SOAK_FUNCTIONS ?? 200);
const SIGN_INS = Number(process.env.SOAK_SIGN_INS ?? 1000);
const TOKENS = Number(process.env.SOAK_TOKENS ?? 2000);
const IDLE_S = Number(process.env.SOAK_IDLE_S ?? 35);
const RAISED = String(1_000_000);

// The service child builds its config from process.env (service-process.ts), which fork hands on:
// set here, these apply there. A soak makes thousands of sandboxes and sign-ups, from addresses it
// names in X-Forwarded-For, and functions that call an upstream on loopback.
Object.assign(process.env, {
  REGISTRATIONS_PER_ADDRESS_PER_DAY: RAISED,
  REGISTRATIONS_PER_DAY: RAISED,
  SIGNUPS_PER_ADDRESS_PER_DAY: RAISED,
  SIGNUPS_PER_DAY: RAISED,
  TRUST_PROXY: 'true',
  OUTBOUND_ALLOW_LIST: '127.0.0.1',
  OUTBOUND_ALLOWED_PORTS: '*',
  // One person registers them all: the default (200) covers the default count only.
  FUNCTIONS_PER_WORKSPACE: String(Math.max(200, FUNCTIONS)),
});

interface Heap {
  heapUsed: number;
  rss: number;
  metricsLines: number;
}

interface Step {
  name: string;
  /** What the step made, for its bytes per item (0: none). */
  items: number;
  heap: Heap;
  redis: RedisReading | null;
}

/** The external functions' endpoint: every call priced the same, so only the service's side varies. */
function startUpstream(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ price: 12, confidence: 0.7, currency: 'USD' }));
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const idle = () => new Promise((r) => setTimeout(r, IDLE_S * 1000));
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

async function timed(label: string, tally: Tally, kind: string, run: () => Promise<void>): Promise<void> {
  const t0 = Date.now();
  await run();
  console.log(`${label}: ${tally.requests.get(kind) ?? 0} requests in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

function printTable(steps: Step[]): void {
  const redis = steps.some((s) => s.redis);
  console.log(`\n| step | heap used after GC MB | change MB | bytes per item | RSS MB | /metrics lines |${redis ? ' Redis used MB | Redis bytes per item | Redis keys | keys without expiry |' : ''}`);
  console.log(`|---|---|---|---|---|---|${redis ? '---|---|---|---|' : ''}`);
  steps.forEach((s, i) => {
    const prev = steps[i - 1];
    const change = prev ? s.heap.heapUsed - prev.heap.heapUsed : null;
    const perItem = change !== null && s.items > 0 ? (change / s.items).toFixed(0) : '-';
    let line = `| ${s.name} | ${mb(s.heap.heapUsed)} | ${change === null ? '-' : mb(change)} | ${perItem} | ${mb(s.heap.rss)} | ${s.heap.metricsLines} |`;
    if (s.redis) {
      const redisPerItem = prev?.redis && s.items > 0 ? ((s.redis.usedMemory - prev.redis.usedMemory) / s.items).toFixed(0) : '-';
      line += ` ${mb(s.redis.usedMemory)} | ${redisPerItem} | ${s.redis.keys} | ${s.redis.withoutExpiry} |`;
    }
    console.log(line);
  });
}

function perItem(steps: Step[], name: string): string {
  const i = steps.findIndex((s) => s.name.includes(name));
  const s = steps[i];
  const prev = steps[i - 1];
  return s && prev && s.items > 0 ? ((s.heap.heapUsed - prev.heap.heapUsed) / s.items).toFixed(0) : 'n/a';
}

function redisPerItem(steps: Step[], name: string): string {
  const i = steps.findIndex((s) => s.name.includes(name));
  const s = steps[i]?.redis;
  const prev = steps[i - 1]?.redis;
  const items = steps[i]?.items ?? 0;
  return s && prev && items > 0 ? ((s.usedMemory - prev.usedMemory) / items).toFixed(0) : 'n/a';
}

async function main(): Promise<void> {
  // Before the service starts: in Redis mode this sets REDIS_URL and a key prefix of the soak's own for it.
  const redis = await soakRedis();
  const upstream = await startUpstream();
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/price`;
  const service = await startChild('service-process.js', (process.env.BENCH_SERVICE_NODE_ARGS ?? '').split(' ').filter(Boolean));
  const tally = new Tally();
  const client = new SoakClient(await ask<string>(service, 'url'), tally);
  const steps: Step[] = [];
  const measure = async (name: string, items: number) => steps.push({ name, items, heap: await ask<Heap>(service, 'heap'), redis: (await redis?.read()) ?? null });
  try {
    console.log(
      `Soak: ${SANDBOXES} sandboxes, ${DEMO_ADDRESSES} demo addresses, ${BAD_KEYS} made-up keys, ${FUNCTIONS} functions, ` +
        `${IDLE_S} s idle before each reading, Node ${process.version}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    );
    // Warm-up: one of each kind, so what a first call sets up once (modules, workers, built-ins' metric series) is in the start.
    const realKey = await sandbox(client, 'warm-up');
    if (!realKey) throw new Error('warm-up: the registration failed; see the unexpected answers');
    const reg = await client.call<{ limits: { registrations: { per_address_per_day: number } } }>('warm-up', 'POST', '/api/agents/register', { ip: client.address(), body: { name: 'soak-check' } }, 201);
    if (String(reg?.json?.limits.registrations.per_address_per_day) !== RAISED) throw new Error('the service did not take the soak\'s settings from the environment');
    await demoAddresses(client, 'warm-up', 1);
    await badKeys(client, 'warm-up', 1, realKey);
    const warmOwner = await person(client, 'warm-up');
    if (warmOwner) await functions(client, 'warm-up', warmOwner, 1, upstreamUrl);
    // The first reading adds series of its own to /metrics (the scrape's route, the forced collections' kind): made before the start, they are not counted against the first kind.
    await ask<Heap>(service, 'heap');
    await measure('start (after warm-up)', 0);

    await timed(`${SANDBOXES} sandboxes`, tally, 'sandboxes', () => sandboxes(client, 'sandboxes', SANDBOXES));
    await idle();
    await measure(`${SANDBOXES} sandboxes`, SANDBOXES);

    await timed(`${DEMO_ADDRESSES} demo addresses`, tally, 'demo', () => demoAddresses(client, 'demo', DEMO_ADDRESSES));
    await idle();
    await measure(`${DEMO_ADDRESSES} demo addresses`, DEMO_ADDRESSES);

    await timed(`${BAD_KEYS} made-up keys`, tally, 'bad keys', () => badKeys(client, 'bad keys', BAD_KEYS, realKey));
    await idle();
    await measure(`${BAD_KEYS} made-up keys`, BAD_KEYS);

    await timed(`${FUNCTIONS} functions`, tally, 'functions', async () => {
      const owner = await person(client, 'functions');
      if (owner) await functions(client, 'functions', owner, FUNCTIONS, upstreamUrl);
    });
    await idle();
    await measure(`${FUNCTIONS} functions`, FUNCTIONS);

    const signedIn = await person(client, 'sign-ins');
    if (signedIn) {
      await timed(`${SIGN_INS} sign-ins`, tally, 'sign-ins', () => signIns(client, 'sign-ins', signedIn, SIGN_INS));
      await idle();
      await measure(`${SIGN_INS} sign-ins`, SIGN_INS);
      const key = await agentKey(client, 'tokens', signedIn);
      if (key) await timed(`${TOKENS} access tokens`, tally, 'tokens', () => tokens(client, 'tokens', { ip: signedIn.ip, key }, TOKENS));
      await idle();
      await measure(`${TOKENS} access tokens`, TOKENS);
    }

    // Caches that drop expired entries only as new ones come need new traffic to shed the old.
    const fresh = Math.floor(SANDBOXES / 10);
    await idle();
    await timed(`${fresh} fresh sandboxes`, tally, 'end', () => sandboxes(client, 'end', fresh));
    await measure(`end: idle, then ${fresh} fresh sandboxes`, fresh);

    printTable(steps);
    // Caches that sweep on use move part of one kind's retention into a later reading: the whole soak's is the steadier A/B figure.
    const whole = (steps[steps.length - 1]?.heap.heapUsed ?? 0) - (steps[0]?.heap.heapUsed ?? 0);
    console.log(
      `\nRetained bytes: ${perItem(steps, 'sandboxes')} per sandbox, ${perItem(steps, 'demo')} per demo address, ` +
        `${perItem(steps, 'made-up')} per made-up key, ${perItem(steps, 'functions')} per function, ${perItem(steps, 'sign-ins')} per sign-in, ${perItem(steps, 'tokens')} per access token; the whole soak ${mb(whole)} MB over the start.`,
    );
    const last = steps[steps.length - 1]?.redis;
    if (last) {
      console.log(
        `Redis: ${redisPerItem(steps, 'sandboxes')} bytes per sandbox, ${redisPerItem(steps, 'demo')} per demo address, ` +
          `${redisPerItem(steps, 'made-up')} per made-up key, ${redisPerItem(steps, 'functions')} per function, ${redisPerItem(steps, 'sign-ins')} per sign-in, ${redisPerItem(steps, 'tokens')} per access token; ` +
          `${last.keys} keys at the end, ${last.withoutExpiry} of them without an expiry.`,
      );
    }
    const unexpected = [...tally.unexpected];
    console.log(unexpected.length === 0 ? 'Every answer had the expected status.' : `\nUnexpected answers:\n${unexpected.map(([what, n]) => `  ${what}: ${n}`).join('\n')}`);
    for (const sample of tally.samples) console.log(`  e.g. ${sample}`);
  } finally {
    await stopChild(service);
    upstream.close();
    await redis?.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
