import { expect } from 'chai';
import { RouteTable } from '../../../core/http/pipeline';
import type { RouteSpec } from '../../../core/http/route';
import type { McpTool } from '../../../plugins/mcp';
import { withStepTools } from '../../../plugins/mcp/services/step-tools';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

type Step = { action: string; method: string; path: string; tool?: string };

// What each tool does as REST, for a caller with a key and for one without.
const TWINS: Record<string, { keyed: string; keyless: string }> = {
  'POST /api/compute/price': { keyed: 'compute_price', keyless: '' },
  'POST /api/public/compute/demo': { keyed: '', keyless: 'compute_price' },
  'POST /api/price-router/verify': { keyed: 'verify_price', keyless: '' },
  'POST /api/public/price-router/verify': { keyed: '', keyless: 'verify_price' },
  'GET /api/functions': { keyed: 'list_functions', keyless: 'list_functions' },
  'GET /api/catalog': { keyed: 'browse_catalog', keyless: 'browse_catalog' },
};
const toolFor = (step: Step, keyed: boolean): string | undefined => TWINS[`${step.method} ${step.path.split('?')[0] ?? ''}`]?.[keyed ? 'keyed' : 'keyless'] || undefined;

describe('MCP tool results name the tool beside a next step it does', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  before(async () => {
    svc = await startTestService();
    key = (await createKey(svc, await signUp(svc, 'mcp-steps'), { name: 'mcp-steps' })).key;
  });
  after(() => svc.close());

  const callTool = async (name: string, args: unknown, headers: Record<string, string>): Promise<Record<string, any>> => {
    const res = await fetch(`${svc.url}/api/mcp/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    });
    expect(res.status).to.equal(200);
    const { result } = (await res.json()) as Record<string, any>;
    expect(result.isError, JSON.stringify(result)).to.equal(false);
    expect(JSON.parse(result.content[0].text as string), 'text and structuredContent alike').to.deep.equal(result.structuredContent);
    return result.structuredContent as Record<string, any>;
  };
  const args = { context: { product_type: 'widget', unit_cost: 3, currency: 'USD' }, function_id: 'fn_builtin_cost_plus' };

  for (const keyed of [true, false]) {
    it(`compute_price ${keyed ? 'with a key' : 'without a key'}: each next action a tool does for this caller carries the tool's name, the others none, and REST's answer carries none`, async () => {
      const body = await callTool('compute_price', args, keyed ? { 'x-api-key': key } : {});
      const steps = body.next_actions as Step[];
      expect(steps.length).to.be.greaterThan(0);
      for (const step of steps) expect(step.tool, `${step.action} ${step.method} ${step.path}`).to.equal(toolFor(step, keyed));
      // Verification is offered (the context names a product type), as verify_price: the tool the caller can call.
      expect(steps.find((s) => s.action === (keyed ? 'verify_price' : 'verify_price_demo'))?.tool).to.equal('verify_price');
      expect(steps.some((s) => s.tool === undefined), 'a step no tool does (report_outcome, get_a_free_key) stays REST alone').to.equal(true);
      const rest = await fetch(`${svc.url}${keyed ? '/api/compute/price' : '/api/public/compute/demo'}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(keyed ? { 'x-api-key': key } : {}) },
        body: JSON.stringify(args),
      });
      expect(rest.status).to.equal(200);
      const restSteps = ((await rest.json()) as Record<string, any>).next_actions as Step[];
      expect(restSteps.map((s) => s.action)).to.deep.equal(steps.map((s) => s.action));
      expect(restSteps.every((s) => !('tool' in s))).to.equal(true);
    });
  }

  it("names the tool beside a refusal's next step too (a query aside), copying the steps rather than changing them", () => {
    const table = new RouteTable();
    const route = (id: string, method: 'get' | 'post', path: string) => ({ id, method, path, summary: id, handler: () => undefined }) as unknown as RouteSpec;
    table.add('pricing', route('functions.list', 'get', '/api/functions'));
    table.add('pricing', route('compute.price', 'post', '/api/compute/price'));
    const tools = [
      { descriptor: { name: 'list_functions' }, twin: { keyed: 'functions.list', keyless: 'functions.list' } },
      { descriptor: { name: 'compute_price' }, twin: { keyed: 'compute.price', keyless: 'demo.compute' } },
    ] as unknown as McpTool[];
    const next = [
      { action: 'list_built_ins', method: 'GET', path: '/api/functions?built_in=true' },
      { action: 'compute', method: 'POST', path: '/api/compute/price', body: { context: {} } },
      { action: 'sign_in', method: 'POST', path: '/api/auth/signin' },
    ];
    const body = { code: 'function_not_found', next };
    const keyed = withStepTools(body, tools, table, true);
    expect((keyed.next as Step[]).map((s) => s.tool)).to.deep.equal(['list_functions', 'compute_price', undefined]);
    // Without a key compute_price is the demo's twin, not POST /api/compute/price's.
    expect((withStepTools(body, tools, table, false).next as Step[]).map((s) => s.tool)).to.deep.equal(['list_functions', undefined, undefined]);
    expect(next.every((s) => !('tool' in s)), 'the steps given are left as they were').to.equal(true);
  });
});
