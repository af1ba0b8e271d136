import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { leaveMidway, rowsOnceSettled, whileLocked } from '../../support/abandoned-call';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import { computeCount } from '../../support/metrics';
import { ApiError } from '../../../core/errors';
import type { PluginDefinition } from '../../../core/plugin';
import { builtInPlugins } from '../../../plugins';
import { TOKENS } from '../../../core/tokens';
import type { Pool } from 'pg';

type Body = Record<string, any>;
const priced = { context: { unit_cost: 4, target_margin: 0.3, currency: 'USD' }, function_id: 'fn_builtin_cost_plus' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const lenient = { limits: { rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 } } };

/** Makes each mark of an event as not delivered take 1.5 s, as a slow database would: the window a retry races. */
async function slowNotDeliveredMarks(svc: TestService, name: string): Promise<void> {
  await svc.sequelize.query(`CREATE FUNCTION ${name}() RETURNS trigger AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NEW; END $$ LANGUAGE plpgsql`);
  await svc.sequelize.query(
    `CREATE TRIGGER ${name} BEFORE UPDATE ON usage_events FOR EACH ROW WHEN (NEW.error_code = 'not_delivered' AND OLD.error_code IS DISTINCT FROM 'not_delivered') EXECUTE FUNCTION ${name}()`,
  );
}

/**
 * Idempotency-Key races found in review: a retry sent while the first call with its key is still in
 * flight (its caller gone, its insert slow), and two calls with one key at once on a sandbox's last
 * allowed call. A call with a key waits for one with the same key in flight on this instance.
 */
describe('compute idempotency: a retry that races a call whose caller left', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: lenient });
  });
  after(() => svc.close());

  it('answers its own price (the key is free again), not 409 after pricing', async () => {
    const person = await signUp(svc, 'rev-409');
    const key = (await createKey(svc, person, { name: 'k' })).key;
    const api = client(svc.url, { 'x-api-key': key });
    const idem = randomUUID();
    let retry!: Promise<{ status: number; body: Body }>;
    await whileLocked(svc, 'compute_idempotency_keys', 'SHARE', async () => {
      // The first call waits on its insert; its caller times out and retries at once with the key.
      await leaveMidway(svc.url, '/api/compute/price', { headers: { 'x-api-key': key, 'idempotency-key': idem }, body: priced, afterMs: 300 });
      retry = api.post<Body>('/api/compute/price', priced, { 'idempotency-key': idem });
      await new Promise((r) => setTimeout(r, 300));
    });
    const r = await retry;
    const rows = await rowsOnceSettled<{ billable: boolean }>(svc, `SELECT billable FROM usage_events WHERE workspace_id = '${person.workspaceId}'`, (x) => x.length >= 2);
    expect(rows.filter((x) => x.billable), 'charged once: the retry, not the call nobody received').to.have.length(1);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
  });
});

describe('compute idempotency: a retry sent between a keyed call\'s write and its not-delivered mark', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: lenient });
    await slowNotDeliveredMarks(svc, 'slow_mark_for_test');
  });
  after(() => svc.close());

  it('leaves the replayed answer charged (or the retry priced afresh), never delivered and uncharged', async () => {
    const person = await signUp(svc, 'rev-mark');
    const key = (await createKey(svc, person, { name: 'k' })).key;
    const api = client(svc.url, { 'x-api-key': key });
    const idem = randomUUID();
    // The first call waits on its insert (the keys table locked), its caller leaves, then the insert commits.
    await whileLocked(svc, 'compute_idempotency_keys', 'SHARE', () => leaveMidway(svc.url, '/api/compute/price', { headers: { 'x-api-key': key, 'idempotency-key': idem }, body: priced, afterMs: 300 }));
    await sleep(150);
    const retry = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': idem });
    expect(retry.status, retry.text).to.equal(200);
    const replayed = retry.headers.get('idempotent-replayed');
    const rows = await rowsOnceSettled<{ id: string; error_code: string | null; billable: boolean }>(
      svc,
      `SELECT id, error_code, billable FROM usage_events WHERE workspace_id = '${person.workspaceId}' ORDER BY id`,
      (r) => r.some((e) => e.error_code === 'not_delivered'),
      100,
    );
    expect(replayed, 'the first call was never delivered: the retry is priced').to.equal(null);
    expect(rows.filter((r) => r.billable), 'the answer the retry got is charged once').to.have.length(1);
  });
});

describe('compute idempotency: two calls with one key at once on a sandbox\'s last allowed call', function () {
  this.timeout(90_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: { limits: { registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 }, rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 }, sandbox: { computeCallsPerDay: 3 } } } });
  });
  after(() => svc.close());

  it('answers both (one of them a replay), as docs/routing.md promises, instead of 429 for one', async () => {
    const sandbox = await registerSandbox(svc, 'rev-last');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    for (let i = 0; i < 2; i++) expect((await api.post('/api/compute/price', priced)).status).to.equal(200);
    const key = randomUUID();
    const [a, b] = await Promise.all([api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key }), api.post<Body>('/api/compute/price', priced, { 'idempotency-key': key })]);
    expect([a.status, b.status]).to.deep.equal([200, 200]);
    expect([a.headers.get('idempotent-replayed'), b.headers.get('idempotent-replayed')].sort()).to.deep.equal(['true', null].sort());
    expect(a.body.receipt.usage_event_id).to.equal(b.body.receipt.usage_event_id);
  });
});

describe('compute idempotency: a retry sent while the pipeline marks a keyed call whose caller left during the notices', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: lenient });
    await slowNotDeliveredMarks(svc, 'slow_late_mark_for_test');
  });
  after(() => svc.close());

  it('waits for the mark and prices afresh: the answer the retry gets is the one charged', async () => {
    const person = await signUp(svc, 'late-mark');
    const key = (await createKey(svc, person, { name: 'k' })).key;
    const api = client(svc.url, { 'x-api-key': key });
    const idem = randomUUID();
    // The call is recorded, then waits on the notices lookup (its table locked); its caller leaves meanwhile.
    await whileLocked(svc, 'notice_deliveries', 'ACCESS EXCLUSIVE', () => leaveMidway(svc.url, '/api/compute/price', { headers: { 'x-api-key': key, 'idempotency-key': idem }, body: priced, afterMs: 400 }));
    // The pipeline now finds the caller gone and marks the call (slowly); the retry arrives during the mark.
    const retry = await api.post<Body>('/api/compute/price', priced, { 'idempotency-key': idem });
    expect(retry.status, retry.text).to.equal(200);
    expect(retry.headers.get('idempotent-replayed'), 'the first answer reached nobody: the retry is priced').to.equal(null);
    const rows = await rowsOnceSettled<{ billable: boolean; error_code: string | null }>(svc, `SELECT billable, error_code FROM usage_events WHERE workspace_id = '${person.workspaceId}'`, (r) => r.some((e) => e.error_code === 'not_delivered') && r.length >= 2, 100);
    expect(rows.filter((r) => r.billable), 'charged once: the retry').to.have.length(1);
  });
});

describe('compute idempotency: a retry on another instance while the first instance marks the call not delivered', function () {
  this.timeout(60_000);
  let one: TestService;
  let two: TestService;
  before(async () => {
    one = await startTestService({ config: lenient });
    two = await startTestService({ config: lenient, databaseUrl: one.databaseUrl });
    await slowNotDeliveredMarks(one, 'slow_cross_mark_for_test');
  });
  after(async () => {
    await two.close();
    await one.close();
  });

  it('charges the answer the retry got, once: a replay and the mark of its original never both happen', async () => {
    const person = await signUp(one, 'cross-mark');
    const key = (await createKey(one, person, { name: 'k' })).key;
    const idem = randomUUID();
    await whileLocked(one, 'notice_deliveries', 'ACCESS EXCLUSIVE', () => leaveMidway(one.url, '/api/compute/price', { headers: { 'x-api-key': key, 'idempotency-key': idem }, body: priced, afterMs: 400 }));
    // Instance one now marks the call (slowly); the retry goes to instance two, which does not share its turns.
    await sleep(100);
    const retry = await client(two.url, { 'x-api-key': key }).post<Body>('/api/compute/price', priced, { 'idempotency-key': idem });
    expect(retry.status, retry.text).to.equal(200);
    await sleep(2000);
    const [rows] = await one.sequelize.query(`SELECT id, billable FROM usage_events WHERE workspace_id = '${person.workspaceId}'`);
    const billable = (rows as Array<{ id: string; billable: boolean }>).filter((r) => r.billable);
    expect(billable.map((r) => r.id), `replayed: ${retry.headers.get('idempotent-replayed')}`).to.deep.equal([retry.body.receipt.usage_event_id]);
  });
});

describe('compute idempotency: a retry whose caller leaves while it waits for its key', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    // A short wait, past which a waiter still there would price beside the call ahead of it; no result cache to answer it instead.
    svc = await startTestService({ config: { ...lenient, limits: { ...lenient.limits, idempotencyWaitMs: 800 }, engine: { cacheTtlMs: 0 } } });
  });
  after(() => svc.close());

  /** Pricing functions run so far (every attempt, any function). */
  const functionRuns = async (): Promise<number> => {
    const text = await (await fetch(`${svc.url}/metrics`)).text();
    return text
      .split('\n')
      .filter((l) => l.startsWith('pricing_function_calls_total{'))
      .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
  };

  it('ends its wait at once: nothing priced for it, even past the wait, while the call holding the key is still writing', async () => {
    const person = await signUp(svc, 'left-waiting');
    const key = (await createKey(svc, person, { name: 'k' })).key;
    const api = client(svc.url, { 'x-api-key': key });
    const idem = randomUUID();
    const before = await functionRuns();
    let first!: Promise<{ status: number; body: Body }>;
    await whileLocked(svc, 'compute_idempotency_keys', 'SHARE', async () => {
      // The first call holds the key's turn, its insert waiting on the lock.
      first = api.post<Body>('/api/compute/price', priced, { 'idempotency-key': idem });
      await sleep(300);
      await leaveMidway(svc.url, '/api/compute/price', { headers: { 'x-api-key': key, 'idempotency-key': idem }, body: priced, afterMs: 200 });
      await sleep(1_200);
    });
    expect((await first).status).to.equal(200);
    await sleep(200);
    expect(await functionRuns(), 'the first call alone ran a function').to.equal(before + 1);
    const rows = await rowsOnceSettled<{ billable: boolean }>(svc, `SELECT billable FROM usage_events WHERE workspace_id = '${person.workspaceId}'`, (x) => x.length >= 1);
    expect(rows).to.deep.equal([{ billable: true }]);
  });
});

/** Refuses the second admission of one request sent with x-test-refuse-readmission (a payment path running dry between two pricings of it). */
function readmissionRefuser(): PluginDefinition {
  const admitted = new WeakSet<object>();
  return {
    name: 'readmission-refuser',
    description: 'test: refuses a request admitted once already',
    dependsOn: [],
    register(ctx) {
      ctx.hooks.addAdmitter({
        name: 'readmission-refuser',
        admit: async ({ req }) => {
          if (req.headers['x-test-refuse-readmission'] === undefined) return null;
          if (!admitted.has(req)) {
            admitted.add(req);
            return null;
          }
          throw new ApiError('rate_limited', 'Refused on its second admission (test).', { retry_after: 1 });
        },
      });
    },
  };
}

/**
 * Holds chosen statements back, as a slow database would at those moments: `delayOf` names the wait (ms) for a
 * statement's text and parameters, or 0.
 */
function slowStatements(svc: TestService, delayOf: (text: string, values: unknown[]) => number): void {
  const pool = svc.container.resolve<Pool>(TOKENS.PgPool);
  const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>;
  (pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
    const [first, second] = args;
    const config = typeof first === 'string' ? { text: first, values: second } : (first as { text: string; values?: unknown });
    const ms = delayOf(config.text, Array.isArray(config.values) ? config.values : []);
    if (ms > 0) await sleep(ms);
    return query(...args);
  };
}

describe('compute idempotency: a retry that lost its key\'s claim to a call then not delivered, and is refused before it is priced again', function () {
  this.timeout(60_000);
  let svc: TestService;
  const idem = randomUUID();
  let finds = 0;
  before(async () => {
    // No wait for the key's turn: the retry runs beside the first call, as on an instance that shares no store with it.
    svc = await startTestService({ config: { limits: { ...lenient.limits, idempotencyWaitMs: 0 } }, extraPlugins: [readmissionRefuser()], enabled: [...builtInPlugins.map((p) => p.name), 'readmission-refuser'] });
    slowStatements(svc, (text, values) => {
      const rows = typeof values[0] === 'string' ? values[0] : '';
      if (text.includes('INSERT INTO compute_idempotency_keys')) {
        // The first call's record commits at about 300 ms, after its caller left; the retry's claim comes later and finds the key taken.
        if (rows.includes('first-caller')) return 300;
        if (rows.includes('retry-caller')) return 700;
      }
      // The first call's not-delivered mark (which frees the key) lands after the retry lost its claim ...
      if (text.includes("error_code = 'not_delivered'") && text.startsWith('WITH keys')) return 1_000;
      // ... and before the retry looks up the call that holds it (its third lookup of the key: the first call's, its own, this one).
      if (text.includes('FROM compute_idempotency_keys k JOIN usage_events') && values[1] === idem && ++finds === 3) return 1_500;
      return 0;
    });
  });
  after(() => svc.close());

  it('is counted once, under its withheld pricing, as not answered: no price goes uncounted', async () => {
    const person = await signUp(svc, 'lost-claim-count');
    const key = (await createKey(svc, person, { name: 'k' })).key;
    const count = (outcome: string) => computeCount(svc, 'cost-plus', outcome);
    const before = { ok: await count('ok'), notAnswered: await count('not_answered'), notDelivered: await count('not_delivered') };
    await leaveMidway(svc.url, '/api/compute/price', { headers: { 'x-api-key': key, 'idempotency-key': idem, 'user-agent': 'first-caller' }, body: priced, afterMs: 150 });
    const r = await client(svc.url, { 'x-api-key': key, 'user-agent': 'retry-caller' }).post<Body>('/api/compute/price', priced, { 'idempotency-key': idem, 'x-test-refuse-readmission': '1' });
    // Priced, its claim lost to the first call, that call then marked not delivered (its key free again): the retry goes
    // to be priced again and is refused at admission.
    expect(r.status, JSON.stringify(r.body)).to.equal(429);
    expect(r.body.code).to.equal('rate_limited');
    expect(finds, 'the retry looked the key up again after losing its claim').to.be.at.least(4);
    const rows = await rowsOnceSettled<{ error_code: string | null; billable: boolean }>(svc, `SELECT error_code, billable FROM usage_events WHERE workspace_id = '${person.workspaceId}'`, (x) => x.some((e) => e.error_code === 'not_delivered'));
    expect(rows).to.deep.equal([{ error_code: 'not_delivered', billable: false }]);
    const after = { ok: await count('ok'), notAnswered: await count('not_answered'), notDelivered: await count('not_delivered') };
    expect(after.ok - before.ok, 'nothing was answered with a price').to.equal(0);
    expect(after.notAnswered - before.notAnswered, "the retry's pricing, withheld").to.equal(1);
    expect(after.notDelivered - before.notDelivered, 'the first call, whose caller left').to.equal(1);
  });
});
