import { expect } from 'chai';
import { dec, formatMoney } from '../../../core/money';
import { newId } from '../../../core/ids';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import { insertEvent, price, usageConfig } from './helpers';

const sum = (...values: string[]) => formatMoney(values.reduce((a, v) => a.plus(dec(v)), dec(0)), 8);

function monthStart(offset: number): Date {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
}

/**
 * GET /api/usage/summary: requests, prepaid (paid at call time) and billable cost, this month's
 * billable cost, counts by channel and outcome, AI-feature usage reported apart.
 */
describe('usage: summary', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  let workspaceId: string;
  let freeCosts: string[];
  let regularCost: string;
  const lastMonth = () => new Date(monthStart(0).getTime() - 3 * 86_400_000).toISOString();

  before(async () => {
    svc = await startTestService({ config: usageConfig });
    // Two calls under a sandbox's free daily allowance: not paid for, billable.
    const sandbox = await registerSandbox(svc, 'summary-agent');
    workspaceId = sandbox.workspaceId;
    const refused = await client(svc.url, { 'x-api-key': sandbox.key }).get<Record<string, any>>('/api/usage/summary');
    expect(refused.status, 'an unclaimed sandbox has no usage API (SPEC: sandbox capabilities)').to.equal(403);
    const free1 = await price(svc, { 'x-api-key': sandbox.key });
    const free2 = await price(svc, { 'x-api-key': sandbox.key }, { context: { unit_cost: 3 } });
    expect(free1.body.trace.charged).to.include({ paid_via: null, billable: true });
    freeCosts = [free1.cost, free2.cost];
    // A person claims it and keeps the agent's key (full access from then on).
    const owner = await signUp(svc, 'summary-owner');
    const claimer = await createKey(svc, owner, { name: 'claimer', scopes: ['workspace:claim'] });
    const claim = await client(svc.url, { 'x-api-key': claimer.key }).post('/api/agents/claim', { token: sandbox.claimToken, keep_key: true });
    expect(claim.status, claim.text).to.equal(200);
    key = sandbox.key;
    regularCost = (await price(svc, { 'x-api-key': key })).cost;

    // Paid at call time this month (prepaid), a failed call, and last month's calls.
    await insertEvent(svc, { workspaceId, paidVia: 'x402', cost: '0.0012' });
    await insertEvent(svc, { workspaceId, paidVia: 'day_pass', cost: '0.001', channel: 'mcp', outcome: 'accepted' });
    await insertEvent(svc, { workspaceId, paidVia: 'balance', cost: '0.0008', outcome: 'rejected' });
    await insertEvent(svc, { workspaceId, status: 'error', cost: '0', billable: false });
    await insertEvent(svc, { workspaceId, cost: '0.5', createdAt: lastMonth() });
    await insertEvent(svc, { workspaceId, paidVia: 'balance', cost: '0.25', createdAt: lastMonth() });

    const ai = async (feature: string, keySource: string, calls: number, tokens: number, cost: string, createdAt?: string) =>
      svc.sequelize.query('INSERT INTO ai_feature_usage (id, workspace_id, feature, key_source, calls, tokens, cost, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()))', {
        bind: [newId('aiu'), workspaceId, feature, keySource, calls, tokens, cost, createdAt ?? null],
      });
    await ai('agent_generation', 'own_provider_key', 2, 1500, '0.03');
    await ai('task_estimation', 'platform_key', 1, 500, '0.0125');
    await ai('agent_generation', 'platform_key', 4, 4000, '0.2', lastMonth());
  });
  after(() => svc?.close());

  const summary = async (query = '', k = key) => {
    const res = await client(svc.url, { 'x-api-key': k }).get<Record<string, any>>(`/api/usage/summary${query}`);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };

  it('defaults to this calendar month: paid calls are requests and prepaid, free-allowance and ordinary calls are billable', async () => {
    const s = await summary();
    expect(s.period.from).to.equal(monthStart(0).toISOString());
    expect(s.currency).to.equal('USDC');
    expect(s.requests).to.equal(7);
    expect(s.succeeded_requests).to.equal(6);
    expect(s.failed_requests).to.equal(1);
    expect(s.prepaid_requests).to.equal(3);
    expect(s.prepaid_cost).to.equal('0.003');
    expect(s.billable_requests).to.equal(3);
    expect(s.billable_cost).to.equal(sum(...freeCosts, regularCost));
    expect(s.current_period).to.deep.equal({ from: monthStart(0).toISOString(), to: monthStart(1).toISOString() });
    expect(s.current_period_cost).to.equal(s.billable_cost);
    expect(s.total_cost).to.equal(sum(s.prepaid_cost, s.billable_cost));
    expect(s.by_channel).to.deep.equal({ api: 6, mcp: 1, demo: 0 });
    expect(s.by_outcome).to.deep.equal({ accepted: 1, rejected: 1, none: 5 });
    expect(s.by_paid_via).to.deep.equal({ x402: 1, day_pass: 1, balance: 1, none: 4 });
  });

  it('over a longer period counts last month too, while current_period_cost stays this month\'s', async () => {
    const s = await summary(`?from=${monthStart(-1).toISOString()}&to=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(s.requests).to.equal(9);
    expect(s.prepaid_requests).to.equal(4);
    expect(s.prepaid_cost).to.equal('0.253');
    expect(s.billable_cost).to.equal(sum(...freeCosts, regularCost, '0.5'));
    expect(s.current_period_cost).to.equal(sum(...freeCosts, regularCost));
  });

  it('for last month alone: its costs, and this month\'s billable cost still reported as the current period', async () => {
    const s = await summary(`?from=${monthStart(-1).toISOString()}&to=${monthStart(0).toISOString()}`);
    expect(s.requests).to.equal(2);
    expect(s.prepaid_cost).to.equal('0.25');
    expect(s.billable_cost).to.equal('0.50');
    expect(s.current_period_cost).to.equal(sum(...freeCosts, regularCost));
  });

  it('reports AI-feature usage separately: calls, tokens, cost, by key and by feature (compute requests unaffected)', async () => {
    const s = await summary();
    expect(s.ai_features).to.deep.equal({
      calls: 3,
      tokens: 2000,
      cost: '0.0425',
      by_key: { own_provider_key: { calls: 2, tokens: 1500, cost: '0.03' }, platform_key: { calls: 1, tokens: 500, cost: '0.0125' } },
      by_feature: { agent_generation: { calls: 2, tokens: 1500, cost: '0.03' }, task_estimation: { calls: 1, tokens: 500, cost: '0.0125' } },
      offered_features: [],
    });
    expect(s.requests).to.equal(7);
    const longer = await summary(`?from=${monthStart(-1).toISOString()}`);
    expect(longer.ai_features.by_key.platform_key).to.deep.equal({ calls: 5, tokens: 4500, cost: '0.2125' });
  });

  it('answers zeros for a workspace with no usage and no AI-feature usage', async () => {
    const owner = await signUp(svc, 'summary-empty');
    const k = (await createKey(svc, owner, { name: 'empty' })).key;
    const s = await summary('', k);
    expect(s).to.include({ requests: 0, prepaid_requests: 0, prepaid_cost: '0.00', billable_cost: '0.00', current_period_cost: '0.00', total_cost: '0.00' });
    const zero = { calls: 0, tokens: 0, cost: '0.00' };
    // Zeros, and said to be so because no AI feature is offered here, not because none was used.
    expect(s.ai_features).to.deep.equal({ ...zero, by_key: { own_provider_key: zero, platform_key: zero }, by_feature: { agent_generation: zero, task_estimation: zero }, offered_features: [] });
  });

  it('answers current_period_cost 0.00 when every call was already paid for', async () => {
    const owner = await signUp(svc, 'summary-paid');
    const k = (await createKey(svc, owner, { name: 'paid' })).key;
    await insertEvent(svc, { workspaceId: owner.workspaceId, paidVia: 'x402', cost: '0.0012' });
    await insertEvent(svc, { workspaceId: owner.workspaceId, paidVia: 'balance', cost: '0.001' });
    const s = await summary('', k);
    expect(s).to.include({ requests: 2, prepaid_requests: 2, prepaid_cost: '0.0022', billable_cost: '0.00', current_period_cost: '0.00' });
  });

  it('sees only its own workspace', async () => {
    const owner = await signUp(svc, 'summary-other');
    const k = (await createKey(svc, owner, { name: 'other' })).key;
    await price(svc, { 'x-api-key': k });
    const s = await summary('', k);
    expect(s.requests).to.equal(1);
    expect(s.prepaid_requests).to.equal(0);
  });

  for (const [query, path] of [
    ['?from=last-week', 'from'],
    ['?to=2025-02-30T25:00:00Z', 'to'],
    ['?from=2025-05-01&to=2025-04-01', 'to'],
    // A bound refused beside a valid one: the order check meets the string sent, not a time (was 500).
    ['?from=2025-04-01T00:00:00.0001Z&to=2025-05-01', 'from'],
    ['?from=2025-04-01&to=2025-05-01T00:00:00.1234Z', 'to'],
    [`?from=${new Date(Date.now() + 86_400_000).toISOString()}`, 'from'],
    ['?period=month', 'period'],
  ] as const) {
    it(`refuses ${query} with 400 and issues naming ${path}`, async () => {
      const res = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/summary${query}`);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues.map((i: { path: string }) => i.path)).to.include(path);
    });
  }

  it('refuses a to before the default from naming that default (the start of this month), the error text matching the issue', async () => {
    const to = new Date(monthStart(0).getTime() - 86_400_000).toISOString();
    const res = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/summary?to=${to}`);
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    const reason = `must be later than from (${monthStart(0).toISOString()}, the start of this month)`;
    expect(res.body.issues).to.deep.equal([{ path: 'to', reason }]);
    expect(res.body.error).to.equal(`Request query failed validation (to: ${reason}).`);
    expect(res.body.hint).to.be.a('string').and.contain('from defaults to the start of this calendar month');
  });

  it('refuses a from after the default to naming that default (now), the error text matching the issue', async () => {
    const from = new Date(Date.now() + 86_400_000).toISOString();
    const res = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/summary?from=${from}`);
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues).to.have.length(1);
    expect(res.body.issues[0].path).to.equal('from');
    expect(res.body.issues[0].reason).to.match(/^must be earlier than to \(\d{4}-\d{2}-\d{2}T[\d:.]+Z, now\)$/);
    expect(res.body.error).to.equal(`Request query failed validation (from: ${res.body.issues[0].reason as string}).`);
  });

  it('refuses a to not later than a from sent with it, naming that from', async () => {
    const res = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>('/api/usage/summary?from=2025-05-01&to=2025-04-01');
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues).to.deep.equal([{ path: 'to', reason: 'must be later than from (2025-05-01T00:00:00.000Z)' }]);
    expect(res.body.error).to.equal('Request query failed validation (to: must be later than from (2025-05-01T00:00:00.000Z)).');
  });

  it("says a time offset's unencoded '+' arrived as a space and is sent as %2B", async () => {
    const res = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>('/api/usage/summary?from=2025-04-01T00:00+02:00');
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues).to.deep.equal([{ path: 'from', reason: "a '+' in a query string arrives as a space: send it as %2B (2025-04-01T00:00%2B02:00)" }]);
  });

  it('refuses a repeated from or to with the message a repeated limit of the events list gets', async () => {
    for (const name of ['from', 'to']) {
      const res = await client(svc.url, { 'x-api-key': key }).get<Record<string, any>>(`/api/usage/summary?${name}=2025-01-01&${name}=2025-02-01`);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: name, reason: `sent 2 times (${name}=2025-01-01&${name}=2025-02-01); send it once` }]);
    }
  });

  it('is read with any credential of the workspace: keys of any scope and people', async () => {
    const owner = await signUp(svc, 'summary-scoped');
    const compute = (await createKey(svc, owner, { name: 'compute only', scopes: ['price:compute'] })).key;
    const billing = (await createKey(svc, owner, { name: 'billing only', scopes: ['billing:read'] })).key;
    const credentials: Array<Record<string, string>> = [{ 'x-api-key': compute }, { 'x-api-key': billing }, { cookie: owner.cookie }];
    for (const headers of credentials) {
      const res = await client(svc.url, headers).get<Record<string, any>>('/api/usage/summary');
      expect(res.status, res.text).to.equal(200);
    }
  });
});
