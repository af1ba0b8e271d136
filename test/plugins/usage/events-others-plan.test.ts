import { expect } from 'chai';
import { Client } from 'pg';
import { Sql } from '../../../core/db/sql';
import { encodeCursor } from '../../../core/pagination';
import { UsageEvents } from '../../../plugins/usage/services/events';
import { eventsQuery } from '../../../plugins/usage/schemas';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

/**
 * The Others branch of the events list (calls by anyone else to W's own functions) on a table large
 * enough for the planner's choice to matter: 120,000 events over 600 functions, W owning 40 of them.
 * Its rows and order are those of the plain definition, page after page, and it reads the events
 * through usage_events_function_idx, never the whole table (which it did as `function_id IN (SELECT ...)`).
 */
describe('usage: others of a workspace with many functions are read per function through the index', function () {
  this.timeout(120_000);
  const W = 'ws_plan_w';
  let svc: TestService;
  let pg: Client;
  let events: UsageEvents;

  before(async () => {
    svc = await startTestService({});
    pg = new Client({ connectionString: svc.databaseUrl });
    await pg.connect();
    events = new UsageEvents(new Sql(svc.sequelize), true);
    // Synthetic rows without their workspaces: foreign keys are not what is tested.
    await pg.query('SET session_replication_role = replica');
    await pg.query(`INSERT INTO pricing_functions (id, workspace_id, name, execution_type, cost_per_unit, is_public, status)
      SELECT 'fn_plan_' || k, CASE WHEN k <= 40 THEN '${W}' ELSE 'ws_plan_' || (k % 50) END, 'plan-' || k, 'external_api', 0.001, true, 'active'
      FROM generate_series(1, 600) k`);
    await pg.query(`INSERT INTO usage_tester_tags (id, workspace_id, position, label, user_agent_contains) VALUES ('utt_plan', '${W}', 1, 'probe', 'probe')`);
    // Three events to a second (ties broken by id across functions); every 7th made by W itself (mine),
    // every 11th a keyless demo call matching W's tester tag (testers), every 13th keyless not matching.
    await pg.query(`INSERT INTO usage_events (id, workspace_id, created_at, request_id, operation, channel, status, function_id, function_name,
        cost, billable, classification, caller_verified, caller_key_id, caller_user_agent, failed_function_ids)
      SELECT 'use_plan_' || i, CASE WHEN i % 7 = 0 THEN '${W}' ELSE 'ws_plan_' || (i % 50) END,
        timestamptz '2030-01-01' - ((i / 3) || ' seconds')::interval, 'req_plan_' || i, 'compute',
        CASE WHEN i % 11 = 0 OR i % 13 = 0 THEN 'demo' ELSE 'api' END, 'ok',
        CASE WHEN i % 5 = 0 THEN 'fn_builtin_anchored' ELSE 'fn_plan_' || (1 + abs(hashint4(i)) % 600) END, 'x', 0.001, true, 'mine',
        NOT (i % 11 = 0 OR i % 13 = 0), CASE WHEN i % 11 = 0 OR i % 13 = 0 THEN NULL ELSE 'key_plan_' || (i % 100) END,
        CASE WHEN i % 11 = 0 THEN 'probe/1' ELSE 'shop/1' END, '[]'::jsonb
      FROM generate_series(1, 120000) i`);
    await pg.query('ANALYZE usage_events');
    await pg.query('ANALYZE pricing_functions');
  });

  after(async () => {
    await pg?.end();
    await svc?.close();
  });

  /** The Others of W by definition, newest first. */
  const expected = async (): Promise<string[]> =>
    (
      await pg.query(`SELECT e.id FROM usage_events e JOIN pricing_functions f ON f.id = e.function_id AND f.workspace_id = $1
        WHERE e.workspace_id <> $1 AND NOT (e.channel = 'demo' AND NOT e.caller_verified AND e.caller_user_agent LIKE '%probe%')
        ORDER BY e.created_at DESC, e.id DESC`, [W])
    ).rows.map((r: { id: string }) => r.id);

  it('lists the same others, in the same order, on the first page and pages deep by cursor', async () => {
    const all = await expected();
    expect(all.length).to.be.greaterThan(3000);
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 40; page++) {
      const res = await events.list(W, eventsQuery.parse({ classification: 'others', limit: '100', ...(cursor ? { cursor } : {}) }));
      for (const item of res.data) {
        expect(item).to.include({ classification: 'others' }).and.not.to.have.any.keys('request_id', 'context', 'links');
        expect(item.caller).to.include({ key_id: null, agent_id: null, verified: false });
      }
      seen.push(...res.data.map((i) => i.id as string));
      cursor = res.next_cursor ?? undefined;
      if (!cursor) break;
    }
    expect(seen).to.deep.equal(all.slice(0, seen.length));
    expect(seen.length).to.equal(4000);
  });

  it('plans the others branch without a sequential scan of usage_events, first page and deep', async () => {
    let text = '';
    let values: unknown[] = [];
    const capture = { many: async (t: string, v: unknown[]) => ((text = t), (values = v), []) } as unknown as Sql;
    const deep = (await expected())[2000] ?? '';
    for (const cursor of [undefined, encodeCursor({ sort: await keyOf(deep), id: deep })]) {
      await new UsageEvents(capture, true).list(W, eventsQuery.parse({ classification: 'others', ...(cursor ? { cursor } : {}) }));
      const nodes = planNodes((await pg.query(`EXPLAIN (FORMAT JSON) ${text}`, values)).rows[0]['QUERY PLAN'][0].Plan);
      const onEvents = nodes.filter((n) => n['Relation Name'] === 'usage_events');
      expect(onEvents.map((n) => n['Index Name'])).to.include('usage_events_function_idx');
      expect(onEvents.map((n) => n['Node Type'])).not.to.include('Seq Scan');
    }
  });

  type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };
  const planNodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(planNodes)];

  const keyOf = async (id: string): Promise<string> =>
    (await pg.query(`SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') k FROM usage_events WHERE id = $1`, [id])).rows[0].k as string;
});
