import { expect } from 'chai';
import type { Sql } from '../../../core/db/sql';
import { ManualClock, systemClock } from '../../../core/clock';
import { MemoryKvStore } from '../../../core/kv';
import { ConfigError, loadConfig } from '../../../config';
import { ObservationLimits, PRUNE_BATCH, PRUNE_MAX_BATCHES } from '../../../plugins/verification/services/observation-limits';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

type Body = Record<string, any>;

const lenient = {
  registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
  rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
};
const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
const one = (i = 0) => ({ product_type: 'limits-tea', currency: 'USD', amount: `${2 + i / 100}`, observed_at: hoursAgo(1), source: 'shelf-scan' });
const many = (n: number) => Array.from({ length: n }, (_, i) => one(i));
const silentLog = { warn: () => undefined } as never;

describe('verification: bounds on stored price observations', function () {
  this.timeout(60_000);

  describe('settings', () => {
    it('refuses OBSERVATIONS_RETENTION_DAYS shorter than VERIFY_MAX_AGE_DAYS at start, naming both; the defaults keep every observation verification reads', () => {
      expect(() => loadConfig({ OBSERVATIONS_RETENTION_DAYS: '100' })).to.throw(ConfigError, /OBSERVATIONS_RETENTION_DAYS \(verification\.observationRetentionDays\) = 100 is below VERIFY_MAX_AGE_DAYS \(verification\.maxAgeDays\) = 120/);
      expect(() => loadConfig({ VERIFY_MAX_AGE_DAYS: '200.5', OBSERVATIONS_RETENTION_DAYS: '200' })).to.throw(ConfigError, /at least 201/);
      const c = loadConfig({});
      expect(c.verification.observationRetentionDays).to.be.at.least(c.verification.maxAgeDays);
      expect(c.verification.observationsPerDay).to.equal(10000);
      expect(c.verification.observationsMaxPerRequest).to.equal(500);
      expect(loadConfig({ OBSERVATIONS_RETENTION_DAYS: '120' }).verification.observationRetentionDays).to.equal(120);
    });
  });

  describe('over HTTP', () => {
    let svc: TestService;
    let key: string;
    let workspaceId: string;
    const clock = new ManualClock(Date.now());

    before(async () => {
      svc = await startTestService({ clock, config: { limits: lenient, verification: { observationsPerDay: 10, observationsMaxPerRequest: 8 } } });
      const person = await signUp(svc, 'bounded-contributor');
      workspaceId = person.workspaceId;
      key = (await createKey(svc, person, { name: 'data' })).key;
    });
    after(() => svc.close());

    const stored = async () => {
      const [rows] = await svc.sequelize.query(`SELECT count(*)::int AS n FROM price_observations WHERE workspace_id = $1`, { bind: [workspaceId] });
      return (rows[0] as { n: number }).n;
    };

    it('takes at most OBSERVATIONS_MAX_PER_REQUEST observations per request, and the OpenAPI document states that bound', async () => {
      const api = client(svc.url, { 'x-api-key': key });
      const over = await api.post<Body>('/api/data/observations', { observations: many(9) });
      expect(over.status, over.text).to.equal(400);
      expect(over.body.code).to.equal('validation_error');
      expect(over.body.issues).to.deep.include({ path: 'observations', reason: 'send at most 8 observations per request (OBSERVATIONS_MAX_PER_REQUEST)' });
      const doc = await client(svc.url).get<Body>('/api/openapi.json?format=json');
      expect(doc.status).to.equal(200);
      const op = doc.body.paths['/api/data/observations'].post;
      let schema = op.requestBody.content['application/json'].schema as Body;
      if (schema.$ref) schema = doc.body.components.schemas[String(schema.$ref).split('/').pop() as string];
      expect(schema.properties.observations.maxItems).to.equal(8);
      expect(op.summary).to.include('1 to 8');
    });

    it('refuses an observation older than OBSERVATIONS_RETENTION_DAYS (it would be pruned after being stored), naming the setting; one just inside is stored', async () => {
      // A workspace of its own: the daily count of the others stays as the next tests expect.
      const api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'late-contributor'), { name: 'data' })).key });
      const retention = svc.config.verification.observationRetentionDays;
      const old = await api.post<Body>('/api/data/observations', { observations: [{ ...one(), observed_at: hoursAgo(24 * retention + 1) }] });
      expect(old.status, old.text).to.equal(400);
      expect(old.body.issues).to.deep.equal([{ path: 'observations.0.observed_at', reason: `observed_at must be within the last ${retention} days (OBSERVATIONS_RETENTION_DAYS): older observations are not kept` }]);
      const inside = await api.post<Body>('/api/data/observations', { observations: [{ ...one(), observed_at: hoursAgo(24 * retention - 1) }] });
      expect(inside.status, inside.text).to.equal(201);
      expect(inside.body.warnings?.[0]).to.include('VERIFY_MAX_AGE_DAYS');
    });

    it('refuses a request that would pass OBSERVATIONS_PER_WORKSPACE_PER_DAY whole with 429 daily_quota_exceeded, retry_after equal to Retry-After, and limit; what fits is still taken', async () => {
      const api = client(svc.url, { 'x-api-key': key });
      const before = await stored();
      const first = await api.post<Body>('/api/data/observations', { observations: many(6) });
      expect(first.status, first.text).to.equal(201);
      const over = await api.post<Body>('/api/data/observations', { observations: many(5) });
      expect(over.status, over.text).to.equal(429);
      expect(over.body.code).to.equal('daily_quota_exceeded');
      expect(over.body.retry_after).to.be.a('number').and.within(1, 86_400);
      expect(over.headers.get('retry-after')).to.equal(String(over.body.retry_after));
      expect(over.body.limit).to.include({ observations_per_day: 10, remaining: 4, scope: 'workspace' });
      expect(Date.parse(over.body.limit.resets_at as string) % 86_400_000).to.equal(0);
      expect(over.body.hint).to.include('at most 4');
      expect(await stored(), 'nothing of the refused request is stored').to.equal(before + 6);
      const rest = await api.post<Body>('/api/data/observations', { observations: many(4) });
      expect(rest.status, rest.text).to.equal(201);
      const none = await api.post<Body>('/api/data/observations', { observations: many(1) });
      expect(none.status).to.equal(429);
      expect(none.body.limit.remaining).to.equal(0);
      expect(await stored()).to.equal(before + 10);
    });

    it('deletes observations observed more than OBSERVATIONS_RETENTION_DAYS ago once a contribution starts the periodic prune, and keeps the younger ones', async () => {
      const other = await signUp(svc, 'old-contributor');
      const bind = [other.workspaceId];
      // 2500 past the default retention (180 days): more than one batch. 10 inside it, though outside verification's window.
      // Stored before today, so they leave today's quota alone.
      await svc.sequelize.query(
        `INSERT INTO price_observations (id, workspace_id, product_type, currency, amount, observed_at, source, origin, created_at)
         SELECT 'obs_old_' || g, $1, 'limits-old', 'USD', 1, now() - interval '181 days', 'archive', 'contribution', now() - interval '2 days' FROM generate_series(1, 2500) g
         UNION ALL
         SELECT 'obs_kept_' || g, $1, 'limits-old', 'USD', 1, now() - interval '179 days', 'archive', 'contribution', now() - interval '2 days' FROM generate_series(1, 10) g`,
        { bind },
      );
      // The earlier contributions ran this instance's prune already: it runs again an hour later.
      clock.advance(3_600_001);
      const otherKey = (await createKey(svc, other, { name: 'data' })).key;
      const res = await client(svc.url, { 'x-api-key': otherKey }).post<Body>('/api/data/observations', { observations: many(1) });
      expect(res.status, res.text).to.equal(201);
      let left = -1;
      for (let i = 0; i < 100; i++) {
        const [rows] = await svc.sequelize.query(`SELECT count(*)::int AS n FROM price_observations WHERE id LIKE 'obs_old_%'`);
        left = (rows[0] as { n: number }).n;
        if (left === 0) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(left, 'observations past the retention left').to.equal(0);
      const [kept] = await svc.sequelize.query(`SELECT count(*)::int AS n FROM price_observations WHERE workspace_id = $1`, { bind });
      expect((kept[0] as { n: number }).n).to.equal(11);
    });
  });

  it('a prune deletes in statements of at most PRUNE_BATCH rows and stops after PRUNE_MAX_BATCHES, leaving the rest to the next run', async () => {
    const statements: Array<{ sql: string; bind: unknown[] }> = [];
    const sql = {
      exec: async (text: string, bind: unknown[]) => {
        statements.push({ sql: text, bind });
        return PRUNE_BATCH;
      },
    } as unknown as Sql;
    const limits = new ObservationLimits(sql, new MemoryKvStore(systemClock), systemClock, silentLog, 10, 150);
    expect(await limits.pruneNow()).to.equal(PRUNE_BATCH * PRUNE_MAX_BATCHES);
    expect(statements).to.have.length(PRUNE_MAX_BATCHES);
    expect(statements[0]?.sql).to.match(/DELETE FROM price_observations WHERE id IN \(\s*SELECT id FROM price_observations WHERE observed_at < now\(\) - make_interval\(days => \$1::int\) LIMIT \$2::int\)/);
    expect(statements[0]?.bind).to.deep.equal([150, PRUNE_BATCH]);
  });
});
