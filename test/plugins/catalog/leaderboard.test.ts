import { expect } from 'chai';
import type { Pool } from 'pg';
import { TOKENS } from '../../../core/tokens';
import { CATALOG, SCORING_METHOD_VERSION } from '../../../plugins/catalog';
import type { LeaderboardAggregator } from '../../../plugins/catalog';
import { DEMO_WORKSPACE_ID } from '../../../plugins/pricing';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import type { Person } from '../../support/world';
import { countQueries, createFunction, insertEvents, lenient } from './helpers';
import type { EventSpec } from './helpers';

interface Entry {
  rank: number;
  function: { id: string; name: string; label: string; built_in: boolean };
  score: number;
  total_invocations: number | null;
  distinct_consumers: number | null;
  stats: {
    usage_status: 'published' | 'below_threshold';
    score_basis: string;
    components: { acceptance: number; quality: number; reliability: number };
    reported_outcomes: number | null;
    acceptance_rate: number | null;
    mean_quality_score: number | null;
    success_rate: number | null;
    average_confidence: number | null;
    confidence_status: string;
  };
}

interface Board {
  object: string;
  scoring: { method_version: number; description: string; documentation: string };
  computed_at: string | null;
  aggregate_status: string;
  window: { days: number; from: string | null; to: string | null };
  thresholds: { min_distinct_consumers: number; confidence_min_customers: number; confidence_rounding: number };
  data: Entry[];
  has_more: boolean;
  next_cursor: string | null;
  limit: number;
}

const sum = (xs: number[]): number => xs.reduce((s, x) => s + x, 0);

/**
 * Score of method 3 computed independently of the implementation, from each consumer's view:
 * `acceptance` holds each reporting consumer's accepted share, `quality` each scoring consumer's
 * mean quality score; `calls` and `ok` are the consumers' calls (the publisher's left out).
 */
function expectedScore(c: { calls: number; ok: number; acceptance: number[]; quality: number[] }): number {
  const a = (sum(c.acceptance) + 2) / (c.acceptance.length + 4);
  const q = (sum(c.quality) + 2) / (c.quality.length + 4);
  const r = (c.ok + 9) / (c.calls + 10);
  return Math.round(100 * (0.5 * a + 0.3 * q + 0.2 * r) * 100) / 100;
}

describe('catalog: public leaderboard', function () {
  this.timeout(120_000);
  let svc: TestService;
  let aggregator: LeaderboardAggregator;
  let upstream: Upstream;
  let failNext = false;
  /** Five people, each with their own workspace and key. */
  const people: Array<{ person: Person; key: string }> = [];
  let publisherKey: string;
  let publisherWs: string;
  let publisherTestWs: string;

  before(async () => {
    upstream = await startUpstream((req, res) => {
      if (req.path === '/flaky' && failNext) return sendJson(res, 500, { error: 'down' });
      if (req.path === '/down') return sendJson(res, 500, { error: 'down' });
      return sendJson(res, 200, { price: 21, confidence: 0.66 });
    });
    // A long refresh interval: only the start-up computation and the forced refreshes below run.
    svc = await startTestService({ config: { ...lenient, engine: { cacheTtlMs: 0 }, outbound: { allowList: ['127.0.0.1'] }, catalog: { leaderboardRefreshMs: 3_600_000 } } });
    aggregator = svc.container.resolve<LeaderboardAggregator>(CATALOG.Aggregator);
    for (let i = 0; i < 5; i++) {
      const person = await signUp(svc, `lb-${i}`);
      people.push({ person, key: (await createKey(svc, person, { name: 'leaderboard' })).key });
    }
    const publisher = await signUp(svc, 'lb-publisher');
    publisherKey = (await createKey(svc, publisher, { name: 'publisher' })).key;
    publisherWs = publisher.workspaceId;
    publisherTestWs = publisher.testWorkspaceId;
  });
  after(async () => {
    await svc.close();
    await upstream.close();
  });

  const board = async (query = '?limit=100'): Promise<Board> => {
    const res = await client(svc.url).get<Board>(`/api/public/leaderboard${query}`);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };
  const entryOf = (b: Board, id: string): Entry => {
    const e = b.data.find((x) => x.function.id === id);
    if (!e) throw new Error(`${id} is not on the leaderboard`);
    return e;
  };
  const publicFunction = (label: string) => createFunction(svc, publisherKey, { label, isPublic: true });
  const ws = (i: number): string => {
    const p = people[i];
    if (!p) throw new Error(`no person ${i}`);
    return p.person.workspaceId;
  };

  it('states scoring method version 3 with a description and a documentation link that answers', async () => {
    const b = await board();
    expect(b.object).to.equal('list');
    expect(b.scoring.method_version).to.equal(3);
    expect(SCORING_METHOD_VERSION).to.equal(3);
    expect(b.scoring.description).to.contain('Bayesian');
    expect(b.scoring.documentation).to.equal(`${svc.publicUrl()}/api/public/leaderboard/scoring`);
    const doc = await client(svc.url).get<Record<string, any>>(new URL(b.scoring.documentation).pathname);
    expect(doc.status).to.equal(200);
    expect(doc.body.method_version).to.equal(3);
    expect(doc.body.priors).to.deep.equal({ acceptance: { mean: 0.5, weight: 4 }, quality: { mean: 0.5, weight: 4 }, reliability: { mean: 0.9, weight: 10 } });
    expect(doc.body.weights).to.deep.equal({ acceptance: 0.5, quality: 0.3, reliability: 0.2 });
    expect(b.thresholds).to.deep.equal({ min_distinct_consumers: 3, confidence_min_customers: 5, confidence_rounding: 0.05 });
    expect(b.computed_at).to.be.a('string');
    expect(b.aggregate_status).to.equal('ready');
    expect(b.window.days).to.equal(30);
  });

  it('ranks the built-ins and the active public functions that can run only (no pipeline), without a credential', async () => {
    const listed = await publicFunction('lb-listed');
    const draft = await createFunction(svc, publisherKey, { label: 'lb-draft', isPublic: true, status: 'draft' });
    const retired = await createFunction(svc, publisherKey, { label: 'lb-retired', isPublic: true, status: 'inactive' });
    const secret = await createFunction(svc, publisherKey, { label: 'lb-private' });
    // Listed, but every call of it answers 501: nothing to rank it by but the priors.
    const pipeline = await createFunction(svc, publisherKey, { label: 'lb-pipeline', isPublic: true, pipeline: true });
    const b = await board();
    const got = b.data.map((e) => e.function.id);
    expect(got).to.include.members(['fn_builtin_cost_plus', 'fn_builtin_competitive', 'fn_builtin_elasticity', 'fn_builtin_charm', 'fn_builtin_anchored', listed.id]);
    for (const hidden of [draft.id, retired.id, secret.id, pipeline.id]) expect(got).not.to.include(hidden);
    // The catalogue still lists it, as a pipeline.
    const listing = await client(svc.url).get<Record<string, any>>(`/api/catalog/${pipeline.id}`);
    expect(listing.status, listing.text).to.equal(200);
    expect(listing.body.function.execution_type).to.equal('pipeline');
    expect(entryOf(b, 'fn_builtin_cost_plus').function).to.include({ label: 'built-in', built_in: true });
    expect(entryOf(b, listed.id).function).to.include({ label: 'marketplace', built_in: false });
    expect(b.data.map((e) => e.rank)).to.deep.equal(b.data.map((_, i) => i + 1));
    for (let i = 1; i < b.data.length; i++) expect((b.data[i - 1] as Entry).score).to.be.at.least((b.data[i] as Entry).score);
  });

  it('publishes no usage below 3 distinct consumers (nulls, below_threshold), and publishes it at 3', async () => {
    const fn = await publicFunction('lb-threshold');
    const evs = (i: number, n: number): EventSpec[] => Array.from({ length: n }, () => ({ functionId: fn.id, workspaceId: ws(i), outcome: 'accepted', quality: 0.9 }));
    await insertEvents(svc, [...evs(0, 4), ...evs(1, 3)]);
    await aggregator.refresh();
    const two = entryOf(await board(), fn.id);
    expect(two.total_invocations).to.equal(null);
    expect(two.distinct_consumers).to.equal(null);
    expect(two.stats.usage_status).to.equal('below_threshold');
    expect(two.stats.score_basis).to.equal('priors_only');
    expect(two.stats).to.include({ reported_outcomes: null, acceptance_rate: null, mean_quality_score: null, success_rate: null, average_confidence: null });
    expect(two.score).to.equal(58);

    await insertEvents(svc, evs(2, 1));
    await aggregator.refresh();
    const three = entryOf(await board(), fn.id);
    expect(three.total_invocations).to.equal(8);
    expect(three.distinct_consumers).to.equal(3);
    expect(three.stats.usage_status).to.equal('published');
    expect(three.stats.score_basis).to.equal('usage');
    expect(three.stats).to.include({ reported_outcomes: 8, acceptance_rate: 1, mean_quality_score: 0.9, success_rate: 1 });
    expect(three.score).to.equal(expectedScore({ calls: 8, ok: 8, acceptance: [1, 1, 1], quality: [0.9, 0.9, 0.9] }));
    expect(three.score).to.be.greaterThan(58);
  });

  it('does not count the function\'s publisher as one of its consumers (its calls are usage, not a consumer)', async () => {
    const fn = await publicFunction('lb-publisher-self');
    const call = (w: string): EventSpec => ({ functionId: fn.id, workspaceId: w, outcome: 'accepted', quality: 0.9 });
    await insertEvents(svc, [call(publisherWs), call(publisherWs), call(ws(0)), call(ws(1))]);
    await aggregator.refresh();
    const two = entryOf(await board(), fn.id);
    expect(two.distinct_consumers).to.equal(null);
    expect(two.stats.usage_status).to.equal('below_threshold');
    await insertEvents(svc, [call(ws(2))]);
    await aggregator.refresh();
    const three = entryOf(await board(), fn.id);
    expect(three.distinct_consumers).to.equal(3);
    expect(three.total_invocations).to.equal(5);
  });

  it("does not count a person of the publisher's workspace (an admin, not its owner) as a consumer when they call from a workspace of their own", async () => {
    const fn = await publicFunction('lb-admin-author');
    const admin = await signUp(svc, 'lb-publisher-admin');
    await svc.sequelize.query("INSERT INTO memberships (workspace_id, person_id, role) VALUES ($1, $2, 'admin')", { bind: [publisherWs, admin.id] });
    const call = (w: string): EventSpec => ({ functionId: fn.id, workspaceId: w, outcome: 'accepted', quality: 1 });
    await insertEvents(svc, [call(admin.workspaceId), call(admin.workspaceId), call(admin.workspaceId), call(ws(0)), call(ws(1))]);
    await aggregator.refresh();
    const entry = entryOf(await board(), fn.id);
    expect(entry.distinct_consumers, 'two consumers: below the threshold').to.equal(null);
    expect(entry.stats.usage_status).to.equal('below_threshold');
    await insertEvents(svc, [call(ws(2))]);
    await aggregator.refresh();
    const published = entryOf(await board(), fn.id);
    expect(published.distinct_consumers).to.equal(3);
    expect(published.total_invocations).to.equal(6);
  });

  it('reads reliability from the calls the function answered or failed itself: answers from the result cache count as invocations, not as successes', async () => {
    const fn = await publicFunction('lb-cached');
    const call = (w: string, extra: Partial<EventSpec> = {}): EventSpec => ({ functionId: fn.id, workspaceId: w, ...extra });
    // Two fresh answers, two failures (the endpoint went down), and three answers from the cache meanwhile.
    await insertEvents(svc, [call(ws(0)), call(ws(1)), call(ws(2), { status: 'error', errorCode: 'functions_failed' }), call(ws(3), { status: 'error', errorCode: 'functions_failed' }), ...[0, 2, 3].map((i) => call(ws(i), { cached: true }))]);
    await aggregator.refresh();
    const entry = entryOf(await board(), fn.id);
    expect(entry.total_invocations).to.equal(7);
    expect(entry.stats.success_rate).to.equal(0.5);
  });

  it('leaves the publisher\'s own calls and reports out of acceptance, quality and reliability: self-reports do not move its score', async () => {
    const fn = await publicFunction('lb-self-report');
    await insertEvents(svc, [0, 1, 2].map((i): EventSpec => ({ functionId: fn.id, workspaceId: ws(i) })));
    await aggregator.refresh();
    const before = entryOf(await board(), fn.id);
    expect(before.stats.usage_status).to.equal('published');
    // The author calls its own function from its workspace and its test workspace, accepts every
    // answer with quality 1, and has a few calls fail.
    await insertEvents(svc, [
      ...Array.from({ length: 20 }, (): EventSpec => ({ functionId: fn.id, workspaceId: publisherWs, outcome: 'accepted', quality: 1 })),
      ...Array.from({ length: 3 }, (): EventSpec => ({ functionId: fn.id, workspaceId: publisherTestWs, outcome: 'accepted', quality: 1 })),
      ...Array.from({ length: 2 }, (): EventSpec => ({ functionId: fn.id, workspaceId: publisherWs, status: 'error', confidence: null })),
    ]);
    await aggregator.refresh();
    const after = entryOf(await board(), fn.id);
    expect(after.score).to.equal(before.score);
    expect(after.stats.components).to.deep.equal(before.stats.components);
    expect(after.score).to.equal(expectedScore({ calls: 3, ok: 3, acceptance: [], quality: [] }));
    expect(after.stats).to.include({ reported_outcomes: 0, acceptance_rate: null, mean_quality_score: null, success_rate: 1 });
    // Its calls are still usage: they count towards total_invocations, not towards its consumers.
    expect(after.total_invocations).to.equal(28);
    expect(after.distinct_consumers).to.equal(3);
  });

  it('weighs one consumer\'s many reports as that one consumer\'s view: ten rejections from one consumer do not sink a function alone', async () => {
    const rival = await publicFunction('lb-rival');
    await insertEvents(svc, [
      ...[0, 1, 2].map((i): EventSpec => ({ functionId: rival.id, workspaceId: ws(i), outcome: 'accepted', quality: 0.9 })),
      ...Array.from({ length: 10 }, (): EventSpec => ({ functionId: rival.id, workspaceId: ws(3), outcome: 'rejected', quality: 0 })),
    ]);
    await aggregator.refresh();
    const e = entryOf(await board(), rival.id);
    expect(e.distinct_consumers).to.equal(4);
    expect(e.total_invocations).to.equal(13);
    // Four consumers' views: three accepted everything (quality 0.9), one rejected everything (quality 0).
    expect(e.stats.components).to.deep.equal({ acceptance: 0.625, quality: 0.5875, reliability: 0.9565 });
    expect(e.score).to.equal(expectedScore({ calls: 13, ok: 13, acceptance: [1, 1, 1, 0], quality: [0.9, 0.9, 0.9, 0] }));
    expect(e.stats).to.include({ reported_outcomes: 13, acceptance_rate: 0.75, mean_quality_score: 0.675, success_rate: 1 });
    expect(e.score).to.be.greaterThan(58);
  });

  it('counts a person once across their own workspace, a claimed agent workspace and test workspaces', async () => {
    const fn = await createFunction(svc, publisherKey, { label: 'lb-person', isPublic: true, endpointUrl: upstream.url('/ok') });
    const owner = people[3];
    if (!owner) throw new Error('no person 3');
    // The person claims an agent sandbox into their workspace and keeps its key.
    const sandbox = await registerSandbox(svc, 'lb-claimed-agent');
    const claimKey = (await createKey(svc, owner.person, { name: 'claimer', scopes: ['workspace:claim'] })).key;
    const claim = await client(svc.url, { 'x-api-key': claimKey }).post<Record<string, any>>('/api/agents/claim', { token: sandbox.claimToken, keep_key: true });
    expect(claim.status, claim.text).to.equal(200);
    const claimedTestWs = claim.body.test_workspace.id as string;

    // Real calls from the person's own workspace and from the claimed agent's workspace...
    for (const key of [owner.key, owner.key, sandbox.key]) {
      const res = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 20 }, function_id: fn.id });
      expect(res.status, res.text).to.equal(200);
    }
    // ...and recorded calls from the person's test workspace and the claimed agent's test workspace.
    await insertEvents(svc, [
      { functionId: fn.id, workspaceId: owner.person.testWorkspaceId },
      { functionId: fn.id, workspaceId: claimedTestWs },
    ]);
    // Another person with two calls: still two consumers in all.
    await insertEvents(svc, [
      { functionId: fn.id, workspaceId: ws(4) },
      { functionId: fn.id, workspaceId: ws(4) },
    ]);
    await aggregator.refresh();
    const two = entryOf(await board(), fn.id);
    expect(two.stats.usage_status).to.equal('below_threshold');
    expect(two.distinct_consumers).to.equal(null);

    // An unclaimed sandbox belongs to no person: it counts as itself, the third consumer.
    const stray = await registerSandbox(svc, 'lb-stray-agent');
    await insertEvents(svc, [{ functionId: fn.id, workspaceId: stray.workspaceId }]);
    await aggregator.refresh();
    const three = entryOf(await board(), fn.id);
    expect(three.stats.usage_status).to.equal('published');
    expect(three.distinct_consumers).to.equal(3);
    expect(three.total_invocations).to.equal(8);
  });

  it('leaves keyless demo calls (demo tenant) out of the counts', async () => {
    const fn = await publicFunction('lb-demo');
    await insertEvents(svc, [
      { functionId: fn.id, workspaceId: ws(0) },
      { functionId: fn.id, workspaceId: ws(1) },
      ...Array.from({ length: 5 }, (): EventSpec => ({ functionId: fn.id, workspaceId: DEMO_WORKSPACE_ID, channel: 'demo', operation: 'demo' })),
      // a demo-channel event outside the demo tenant is not counted either
      { functionId: fn.id, workspaceId: ws(2), channel: 'demo', operation: 'demo' },
    ]);
    const demo = await client(svc.url).post('/api/public/compute/demo', { context: { current_price: 3 } });
    expect(demo.status, demo.text).to.equal(200);
    await aggregator.refresh();
    const e = entryOf(await board(), fn.id);
    expect(e.stats.usage_status).to.equal('below_threshold');
    expect(e.total_invocations).to.equal(null);
  });

  it('leaves answers that never reached their caller (not_delivered) out of calls and success rate: they say nothing of the function', async () => {
    const fn = await publicFunction('lb-undelivered');
    await insertEvents(svc, [
      ...[0, 1, 2].map((i): EventSpec => ({ functionId: fn.id, workspaceId: ws(i) })),
      { functionId: fn.id, workspaceId: ws(0), status: 'error', confidence: null },
      // The caller left, or the service's own store failed, after the function had answered.
      ...[0, 1, 3].map((i): EventSpec => ({ functionId: fn.id, workspaceId: ws(i), status: 'error', errorCode: 'not_delivered', confidence: 0.8 })),
    ]);
    await aggregator.refresh();
    const e = entryOf(await board(), fn.id);
    expect(e.total_invocations).to.equal(4);
    expect(e.distinct_consumers).to.equal(3);
    expect(e.stats.success_rate).to.equal(0.75);
  });

  it('publishes average confidence only from its own customer floor (5), rounded to the nearest 0.05', async () => {
    const fn = await publicFunction('lb-confidence');
    // 0.81, 0.82, 0.84, 0.86, 0.84 → mean 0.834 → 0.85; four consumers first.
    const values = [0.81, 0.82, 0.84, 0.86, 0.84];
    await insertEvents(svc, values.slice(0, 4).map((confidence, i) => ({ functionId: fn.id, workspaceId: ws(i), confidence })));
    await aggregator.refresh();
    const four = entryOf(await board(), fn.id);
    expect(four.stats.usage_status).to.equal('published');
    expect(four.distinct_consumers).to.equal(4);
    expect(four.stats.average_confidence).to.equal(null);
    expect(four.stats.confidence_status).to.equal('below_threshold');

    await insertEvents(svc, [{ functionId: fn.id, workspaceId: ws(4), confidence: values[4] }]);
    await aggregator.refresh();
    const five = entryOf(await board(), fn.id);
    expect(five.distinct_consumers).to.equal(5);
    expect(five.stats.confidence_status).to.equal('published');
    expect(five.stats.average_confidence).to.equal(0.85);

    // Failed calls carry no confidence and do not pull the mean down; 0.812 → 0.8.
    const other = await publicFunction('lb-confidence-down');
    await insertEvents(svc, [
      ...[0.8, 0.8, 0.8, 0.82, 0.84].map((confidence, i): EventSpec => ({ functionId: other.id, workspaceId: ws(i), confidence })),
      { functionId: other.id, workspaceId: ws(0), status: 'error', confidence: null },
    ]);
    await aggregator.refresh();
    const down = entryOf(await board(), other.id);
    expect(down.stats.average_confidence).to.equal(0.8);
    expect(down.stats.success_rate).to.equal(0.8333);
  });

  it('scores by method 3: outcomes, quality and failures (a failed call names its chosen function) move the score', async () => {
    const good = await publicFunction('lb-good');
    const poor = await createFunction(svc, publisherKey, { label: 'lb-poor', isPublic: true, endpointUrl: upstream.url('/flaky') });
    await insertEvents(svc, [
      { functionId: good.id, workspaceId: ws(0), outcome: 'accepted', quality: 1 },
      { functionId: good.id, workspaceId: ws(1), outcome: 'accepted', quality: 0.8 },
      { functionId: good.id, workspaceId: ws(2), outcome: 'accepted', quality: 0.9 },
      { functionId: good.id, workspaceId: ws(2), outcome: 'rejected' },
    ]);
    // Real calls to the flaky endpoint: two answered, one failed (502 functions_failed).
    for (const [i, fail] of [[0, false], [1, false], [2, true]] as const) {
      failNext = fail;
      const res = await client(svc.url, { 'x-api-key': people[i]?.key ?? '' }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 20 }, function_id: poor.id });
      expect(res.status, res.text).to.equal(fail ? 502 : 200);
    }
    failNext = false;
    const [rows] = await svc.sequelize.query(`SELECT status, function_id FROM usage_events WHERE function_id = $1 ORDER BY status`, { bind: [poor.id] });
    expect(rows).to.deep.equal([
      { status: 'error', function_id: poor.id },
      { status: 'ok', function_id: poor.id },
      { status: 'ok', function_id: poor.id },
    ]);
    await insertEvents(svc, [{ functionId: poor.id, workspaceId: ws(0), outcome: 'rejected', quality: 0.1 }]);
    // An outcome reported on a failed call judges no price: it counts nothing.
    await insertEvents(svc, [{ functionId: poor.id, workspaceId: ws(1), status: 'error', outcome: 'accepted', quality: 1 }]);
    await aggregator.refresh();
    const b = await board();
    const g = entryOf(b, good.id);
    const p = entryOf(b, poor.id);
    expect(g.score).to.equal(expectedScore({ calls: 4, ok: 4, acceptance: [1, 1, 0.5], quality: [1, 0.8, 0.9] }));
    // Each consumer's view weighs one: (1 + 1 + 0.5 + 2) / (3 + 4).
    expect(g.stats.components.acceptance).to.equal(0.6429);
    expect(g.stats).to.include({ reported_outcomes: 4, acceptance_rate: 0.8333, mean_quality_score: 0.9 });
    expect(p.score).to.equal(expectedScore({ calls: 5, ok: 3, acceptance: [0], quality: [0.1] }));
    expect(p.stats.success_rate).to.equal(0.6);
    expect(p.total_invocations).to.equal(5);
    expect(g.rank).to.be.lessThan(p.rank);
    expect(p.score).to.be.lessThan(58);
  });

  it('counts a failure rescued by a fallback against the function that failed, and every failed function of a call where all failed', async () => {
    const rescued = await createFunction(svc, publisherKey, { label: 'lb-rescued', isPublic: true, endpointUrl: upstream.url('/down') });
    const alsoDown = await createFunction(svc, publisherKey, { label: 'lb-also-down', isPublic: true, endpointUrl: upstream.url('/down') });
    const backup = await createFunction(svc, publisherKey, { label: 'lb-backup', isPublic: true, endpointUrl: upstream.url('/backup') });
    // Three consumers (usage is published from 3), each routing to the failing function first.
    const policies: string[] = [];
    for (const i of [2, 3, 4]) {
      const api = client(svc.url, { 'x-api-key': people[i]?.key ?? '' });
      const policy = await api.post<Record<string, any>>('/api/routing-policies', {
        name: 'rescue',
        is_default: true,
        strategy: 'cheapest',
        config: { candidates: [rescued.name] },
        fallback_chain: [alsoDown.name],
        fallback_function: backup.name,
      });
      expect(policy.status, policy.text).to.equal(201);
      policies.push(policy.body.policy.id);
      const res = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 20 } });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.function.id).to.equal(backup.id);
    }
    // Without the fallback function, every function fails: the event names the chosen one, the chain's failure counts too.
    const last = client(svc.url, { 'x-api-key': people[4]?.key ?? '' });
    expect((await last.patch(`/api/routing-policies/${policies[2]}`, { fallback_function: null })).status).to.equal(200);
    const failed = await last.post<Record<string, any>>('/api/compute/price', { context: { current_price: 20 } });
    expect(failed.status, failed.text).to.equal(502);

    const [rows] = await svc.sequelize.query('SELECT status, function_id, failed_function_ids FROM usage_events WHERE workspace_id = ANY($1) AND (function_id = ANY($2)) ORDER BY created_at', {
      bind: [[ws(2), ws(3), ws(4)], [rescued.id, alsoDown.id, backup.id]],
    });
    expect(rows).to.deep.equal([
      { status: 'ok', function_id: backup.id, failed_function_ids: [rescued.id, alsoDown.id] },
      { status: 'ok', function_id: backup.id, failed_function_ids: [rescued.id, alsoDown.id] },
      { status: 'ok', function_id: backup.id, failed_function_ids: [rescued.id, alsoDown.id] },
      { status: 'error', function_id: rescued.id, failed_function_ids: [alsoDown.id] },
    ]);

    await aggregator.refresh();
    const b = await board();
    const r = entryOf(b, rescued.id);
    expect(r.total_invocations).to.equal(4);
    expect(r.distinct_consumers).to.equal(3);
    expect(r.stats.success_rate).to.equal(0);
    expect(r.score).to.equal(expectedScore({ calls: 4, ok: 0, acceptance: [], quality: [] }));
    const d = entryOf(b, alsoDown.id);
    expect(d.total_invocations).to.equal(4);
    expect(d.stats.success_rate).to.equal(0);
    const k = entryOf(b, backup.id);
    expect(k.total_invocations).to.equal(3);
    expect(k.stats.success_rate).to.equal(1);
    expect(r.rank).to.be.greaterThan(k.rank);
  });

  it('serves every request from the aggregate in memory: no query of usage_events (or anything else) per request', async () => {
    await board(); // warm
    const pool = svc.container.resolve<Pool>(TOKENS.PgPool);
    const during = await countQueries(svc, pool, async () => {
      for (let i = 0; i < 30; i++) await board(i % 2 ? '?limit=3' : '?limit=100');
    });
    expect(during).to.deep.equal([]);
    // Positive control: the refresh is what reads usage_events.
    const refreshing = await countQueries(svc, pool, async () => {
      await aggregator.refresh();
    });
    expect(refreshing.some((q) => q.includes('usage_events'))).to.equal(true);
  });

  it('says when the aggregate was computed, and a refresh moves that time forward', async () => {
    const before = await board();
    await new Promise((r) => setTimeout(r, 5));
    const snap = await aggregator.refresh();
    const after = await board();
    expect(Date.parse(after.computed_at ?? '')).to.equal(snap.computedAt);
    expect(Date.parse(after.computed_at ?? '')).to.be.greaterThan(Date.parse(before.computed_at ?? ''));
    expect(after.window.to).to.equal(after.computed_at);
    expect(Date.parse(after.window.to ?? '') - Date.parse(after.window.from ?? '')).to.equal(30 * 86_400_000);
  });

  it('pages through the ranking with the cursor', async () => {
    const all = (await board()).data.map((e) => e.function.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Board = await board(`?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...page.data.map((e) => e.function.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).to.deep.equal(all);
  });

  it('resumes after the last entry served when the ranking moves between pages: an entry leaving page 1 makes the next page skip nothing', async () => {
    const mine = await publicFunction('lb-moving');
    const all = (await board()).data.map((e) => e.function.id);
    const at = all.indexOf(mine.id);
    expect(at, 'listed').to.be.at.least(0);
    expect(at + 1, 'an entry after it').to.be.below(all.length);
    // Page 1 ends with it; then it leaves the ranking before page 2 is asked for.
    const first = await board(`?limit=${at + 1}`);
    expect(first.data.at(-1)?.function.id).to.equal(mine.id);
    expect((await client(svc.url, { 'x-api-key': publisherKey }).patch(`/api/functions/${mine.id}`, { status: 'inactive' })).status).to.equal(200);
    const second = await board(`?limit=1&cursor=${encodeURIComponent(first.next_cursor ?? '')}`);
    expect(second.data.map((e) => e.function.id)).to.deep.equal([all[at + 1]]);
  });

  it('refuses a cursor it did not issue (one that is no place in the ranking, a bare position included) as the catalogue does', async () => {
    const forged = (sort: unknown): string => Buffer.from(JSON.stringify([sort, 'x'])).toString('base64url');
    for (const cursor of [forged('abc'), forged(1.5), forged('1e400'), forged('3'), forged(3), forged(-1), forged(1e300), 'nonsense']) {
      const res = await client(svc.url).get<Record<string, any>>(`/api/public/leaderboard?cursor=${cursor}`);
      expect(res.status, `${Buffer.from(cursor, 'base64url').toString()}: ${res.text.slice(0, 80)}`).to.equal(400);
      expect(res.body).to.include({ code: 'validation_error', error: 'The cursor is not one this service issued.' });
      expect(res.body.issues[0].path).to.equal('cursor');
    }
  });
});
