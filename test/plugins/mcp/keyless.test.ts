import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

// Arguments each tool takes, so a keyless call is refused (or not) for the missing credential alone.
const ARGS: Record<string, unknown> = {
  compute_price: { context: { unit_cost: 3, currency: 'USD' }, function_id: 'fn_builtin_cost_plus' },
  verify_price: { context: { product_type: 'widget', currency: 'USD' }, proposed_price: '5' },
  list_functions: {},
  browse_catalog: {},
};

describe('MCP manifest: what works without a key', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  const rpc = async (method: string, params?: unknown): Promise<Record<string, any>> => {
    const res = await fetch(`${svc.url}/api/mcp/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, ...(params !== undefined ? { params } : {}) }),
    });
    expect(res.status, method).to.equal(200);
    return (await res.json()) as Record<string, any>;
  };

  it('names in authentication.without_key every method and tool that answers a keyless call, and as demo the tools whose keyless results say demo: true', async () => {
    const res = await fetch(`${svc.url}/.well-known/mcp.json`);
    expect(res.status).to.equal(200);
    const doc = (await res.json()) as Record<string, any>;
    const withoutKey = doc.authentication.without_key as string;
    const [served = '', demoClause = ''] = withoutKey.split('; ');
    const named = (list: string, name: string) => new RegExp(`(^|[ ,])${name}([ ,]|$)`).test(list);

    for (const [method, params] of [
      ['initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'keyless', version: '1' } }],
      ['tools/list', undefined],
      ['ping', undefined],
    ] as const) {
      const answer = await rpc(method, params);
      expect(answer.error, method).to.equal(undefined);
      expect(named(served, method), `${method} in "${withoutKey}"`).to.equal(true);
    }

    const tools = ((await rpc('tools/list')).result.tools as Array<{ name: string }>).map((t) => t.name);
    expect(tools.sort()).to.deep.equal(Object.keys(ARGS).sort());
    const declared = new Map((doc.tools as Array<{ name: string; requiresKey: boolean }>).map((t) => [t.name, t.requiresKey]));
    for (const name of tools) {
      const { result } = await rpc('tools/call', { name, arguments: ARGS[name] });
      const answered = result.isError === false;
      const said = `${name} keyless: ${JSON.stringify(result).slice(0, 300)}; without_key: "${withoutKey}"`;
      expect(named(served, name), said).to.equal(answered);
      expect(declared.get(name), `${name} requiresKey`).to.equal(!answered);
      expect(named(demoClause, name), said).to.equal(answered && result.structuredContent.demo === true);
    }
    expect(demoClause).to.match(/on the demo tenant/);
  });
});
