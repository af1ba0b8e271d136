import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, registerSandbox, signUp } from '../../support/world';

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();

describe('price observations (data contributions)', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  let workspaceId: string;
  let otherKey: string;

  before(async () => {
    svc = await startTestService({ config: lenient });
    const person = await signUp(svc, 'contributor');
    workspaceId = person.workspaceId;
    key = (await createKey(svc, person, { name: 'data' })).key;
    otherKey = (await createKey(svc, await signUp(svc, 'other-contributor'), { name: 'data' })).key;
  });
  after(() => svc.close());

  it('stores valid observations with the owning workspace and source, and lists them', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/data/observations', {
      observations: [
        { product_type: 'Espresso', currency: 'usd', amount: '2.80', observed_at: hoursAgo(2), source: 'shelf-scan', context: { category: 'beverages', region: 'eu-west' } },
        { product_type: 'espresso', currency: 'EUR', amount: '3', observed_at: hoursAgo(1), source: 'menu-board' },
      ],
    });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.created).to.equal(2);
    expect(res.body.data[0]).to.include({ object: 'price_observation', product_type: 'Espresso', currency: 'USD', amount: '2.80', source: 'shelf-scan', origin: 'contribution', usage_event_id: null });
    expect(res.body.data[0].context).to.deep.equal({ category: 'beverages', region: 'eu-west' });
    expect(res.body.data[0].id).to.match(/^obs_/);
    const [rows] = await svc.sequelize.query(`SELECT workspace_id, source, origin, amount::text AS amount FROM price_observations WHERE id = $1`, { bind: [res.body.data[0].id] });
    expect(rows[0]).to.deep.equal({ workspace_id: workspaceId, source: 'shelf-scan', origin: 'contribution', amount: '2.80' });

    const all = await api.get<Record<string, any>>('/api/data/observations');
    expect(all.status).to.equal(200);
    expect(all.body).to.include({ object: 'list', has_more: false, next_cursor: null });
    expect(all.body.data).to.have.length(2);
    const byType = await api.get<Record<string, any>>('/api/data/observations?product_type=ESPRESSO&currency=eur');
    expect(byType.body.data.map((o: any) => o.currency)).to.deep.equal(['EUR']);
    // Another workspace sees only its own.
    const theirs = await client(svc.url, { 'x-api-key': otherKey }).get<Record<string, any>>('/api/data/observations');
    expect(theirs.body.data).to.deep.equal([]);
  });

  it('stores an observation older than the verification window with a warning naming it and VERIFY_MAX_AGE_DAYS; recent ones get no warnings', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const item = (observed_at: string) => ({ product_type: 'vintage', currency: 'USD', amount: '9.00', observed_at, source: 'archive' });
    const res = await api.post<Record<string, any>>('/api/data/observations', { observations: [item(hoursAgo(24 * 170)), item(hoursAgo(1)), item(hoursAgo(24 * 130))] });
    expect(res.status, res.text).to.equal(201);
    expect(res.body.created).to.equal(3);
    expect(res.body.warnings).to.deep.equal([
      'observations.0 and observations.2 were observed more than VERIFY_MAX_AGE_DAYS (120) days ago: they are stored, but verification and the network reference of compute ignore them.',
    ]);
    const recent = await api.post<Record<string, any>>('/api/data/observations', { observations: [item(hoursAgo(2))] });
    expect(recent.status).to.equal(201);
    expect(recent.body).to.not.have.property('warnings');
  });

  it('pages with the list envelope', async () => {
    const person = await signUp(svc, 'pager');
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, person, { name: 'p' })).key });
    const observations = Array.from({ length: 5 }, (_, i) => ({ product_type: 'tea', currency: 'USD', amount: `${i + 1}.00`, observed_at: hoursAgo(i + 1), source: 'pager' }));
    expect((await api.post('/api/data/observations', { observations })).status).to.equal(201);
    const first = await api.get<Record<string, any>>('/api/data/observations?limit=3');
    expect(first.body.data).to.have.length(3);
    expect(first.body.has_more).to.equal(true);
    const second = await api.get<Record<string, any>>(`/api/data/observations?limit=3&cursor=${first.body.next_cursor}`);
    expect(second.body.data).to.have.length(2);
    expect(second.body.has_more).to.equal(false);
    const ids = [...first.body.data, ...second.body.data].map((o: any) => o.id);
    expect(new Set(ids).size).to.equal(5);
  });

  it('reports every bad field of every bad item with its index path, and stores nothing', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const future = new Date(Date.now() + 86_400_000).toISOString();
    const res = await api.post<Record<string, any>>('/api/data/observations', {
      observations: [
        { product_type: 'ok', currency: 'USD', amount: '1.00', observed_at: hoursAgo(1), source: 'fine' },
        { product_type: '', currency: 'DOLLARS', amount: '0', observed_at: future, source: '' },
        { product_type: 'x', currency: 'USD', amount: '-3', observed_at: 'yesterday', source: 's', colour: 'red' },
        { product_type: 'x', currency: 'USD', amount: 12.5, observed_at: '2026-01-01T00:00:00', source: 's', context: { Region: 'x', currency: 'USD', tier: 3 } },
        { currency: 'USD', amount: 'abc', source: 's' },
      ],
    });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    const paths = (res.body.issues as Array<{ path: string; reason: string }>).map((i) => i.path);
    expect(paths).to.include.members([
      'observations.1.product_type',
      'observations.1.currency',
      'observations.1.amount',
      'observations.1.observed_at',
      'observations.1.source',
      'observations.2.amount',
      'observations.2.observed_at',
      'observations.2.colour',
      'observations.3.amount',
      'observations.3.observed_at',
      'observations.3.context.Region',
      'observations.3.context.currency',
      'observations.3.context.tier',
      'observations.4.product_type',
      'observations.4.amount',
      'observations.4.observed_at',
    ]);
    expect(paths.some((p) => p.startsWith('observations.0'))).to.equal(false);
    const reasonOf = (path: string) => (res.body.issues as Array<{ path: string; reason: string }>).find((i) => i.path === path)?.reason ?? '';
    expect(reasonOf('observations.1.observed_at')).to.match(/future/);
    expect(reasonOf('observations.1.amount')).to.match(/greater than 0/);
    expect(reasonOf('observations.2.colour')).to.match(/unknown field "colour"/);
    expect(res.body.example).to.have.property('observations');
    const [rows] = await svc.sequelize.query(`SELECT count(*)::int AS n FROM price_observations WHERE product_type = 'ok'`);
    expect((rows[0] as { n: number }).n).to.equal(0);
  });

  it('names the rule an amount breaks: a leading zero, no decimal at all, or another JSON type than a string', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const amounts = ['0020.10', 'abc', 20, [20], { amount: 20 }, true, '0', '-3'];
    const res = await api.post<Record<string, any>>('/api/data/observations', {
      observations: amounts.map((amount) => ({ product_type: 'tea', currency: 'USD', amount, observed_at: hoursAgo(1), source: 'shelf' })),
    });
    expect(res.status, res.text).to.equal(400);
    expect((res.body.issues as Array<{ path: string; reason: string }>).map((i) => i.reason)).to.deep.equal([
      'amount must not start with a leading zero: "20.10"',
      'amount must be a decimal number: digits with at most one point and digits after it, such as "12.50" (no spaces, signs, exponents or thousands separators)',
      'amount must be a decimal string such as "12.50", not a number: send it in quotes',
      'amount must be a decimal string such as "12.50", not an array',
      'amount must be a decimal string such as "12.50", not an object',
      'amount must be a decimal string such as "12.50", not a boolean (true)',
      'amount must be a decimal string greater than 0, such as "12.50" (at most 18 digits before and after the point)',
      'amount must be a decimal string greater than 0, such as "12.50" (at most 18 digits before and after the point)',
    ]);
  });

  it('answers an empty (or blank) product_type or source with one issue each, saying it must not be empty', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/data/observations', { observations: [{ product_type: '', currency: 'USD', amount: '1.00', observed_at: hoursAgo(1), source: '  ' }] });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.issues).to.deep.equal([
      { path: 'observations.0.product_type', reason: 'product_type must not be empty' },
      { path: 'observations.0.source', reason: 'source must not be empty' },
    ]);
  });

  it('answers an impossible date (February 30) with one issue, that it is no date-time, not also that it is too old', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/data/observations', { observations: [{ product_type: 'tea', currency: 'USD', amount: '1.00', observed_at: '2026-02-30T21:00:00Z', source: 'shelf' }] });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues).to.have.length(1);
    expect(res.body.issues[0].path).to.equal('observations.0.observed_at');
    expect(res.body.issues[0].reason).to.match(/^observed_at must be an ISO 8601 date-time with a time zone, such as \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  it('refuses C0 and C1 control characters in product_type and source, and keeps other Unicode', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const item = (product_type: string, source: string) => ({ product_type, currency: 'USD', amount: '1.00', observed_at: hoursAgo(1), source });
    const bad = await api.post<Record<string, any>>('/api/data/observations', { observations: [item('bell\u0007', 'ok'), item('ok', 'csi\u009b'), item('del\u007f', 'nul\u0000')] });
    expect(bad.status, bad.text).to.equal(400);
    const paths = (bad.body.issues as Array<{ path: string; reason: string }>).map((i) => i.path).sort();
    expect(paths).to.deep.equal(['observations.0.product_type', 'observations.1.source', 'observations.2.product_type', 'observations.2.source']);
    const good = await api.post<Record<string, any>>('/api/data/observations', { observations: [item('café crème ☕', 'boutique—nord')] });
    expect(good.status, good.text).to.equal(201);
  });

  it('takes 1 to 500 observations per request', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const none = await api.post<Record<string, any>>('/api/data/observations', { observations: [] });
    expect(none.status).to.equal(400);
    expect(none.body.issues[0].path).to.equal('observations');
    const one = { product_type: 'bulk', currency: 'USD', amount: '1.00', observed_at: hoursAgo(1), source: 'bulk' };
    const max = await api.post<Record<string, any>>('/api/data/observations', { observations: Array.from({ length: 500 }, () => one) });
    expect(max.status).to.equal(201);
    expect(max.body.created).to.equal(500);
    const over = await api.post<Record<string, any>>('/api/data/observations', { observations: Array.from({ length: 501 }, () => one) });
    expect(over.status).to.equal(400);
    expect(over.body.issues[0].path).to.equal('observations');
  });

  it('answers a body that is not JSON with 400 invalid_json, a hint and an example', async () => {
    const res = await client(svc.url, { 'x-api-key': key }).raw<Record<string, any>>('POST', '/api/data/observations', { rawBody: '{"observations": [', headers: { 'content-type': 'application/json' } });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('invalid_json');
    expect(res.body.hint).to.be.a('string');
    expect(res.body.example).to.have.property('observations');
  });

  it('offers an example whose observations, posted as given, are recent and count as evidence in verify', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const example = (await api.post<Record<string, any>>('/api/data/observations', {})).body.example as { observations: Array<{ product_type: string; observed_at: string }> };
    for (const o of example.observations) expect(Date.now() - Date.parse(o.observed_at)).to.be.within(0, 86_400_000);
    const res = await api.post<Record<string, any>>('/api/data/observations', example);
    expect(res.status, res.text).to.equal(201);
    expect(res.body.created).to.equal(example.observations.length);
    const verdict = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: example.observations[0]?.product_type, currency: 'USD' }, proposed_price: '1.20' });
    expect(verdict.status, verdict.text).to.equal(200);
    expect(verdict.body.evidence).to.include({ ignored_older_than_max_age: 0, used: example.observations.length });
  });

  it('refuses contributions from an unclaimed agent sandbox with 403 and a reason', async () => {
    const sandbox = await registerSandbox(svc, 'contributor-agent');
    const res = await client(svc.url, { 'x-api-key': sandbox.key }).post<Record<string, any>>('/api/data/observations', {
      observations: [{ product_type: 'x', currency: 'USD', amount: '1', observed_at: hoursAgo(1), source: 's' }],
    });
    expect(res.status).to.equal(403);
    expect(res.body.reason).to.be.a('string');
  });
});
