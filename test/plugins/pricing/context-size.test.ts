import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, signUp } from '../../support/world';

const MAX = 400;

/** A context whose JSON is exactly `bytes` long in UTF-8, padded in `note` with `unit` (one or more bytes a character). */
function contextOf(bytes: number, unit = 'a'): Record<string, unknown> {
  const base = { current_price: 10, unit_cost: 6, note: '' };
  const room = bytes - Buffer.byteLength(JSON.stringify(base));
  const perChar = Buffer.byteLength(unit);
  if (room % perChar !== 0) throw new Error(`cannot pad ${room} bytes with ${perChar}-byte characters`);
  return { ...base, note: unit.repeat(room / perChar) };
}

async function mcpClient(svc: TestService) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
  const mcp = new Client({ name: 'context-size', version: '0.0.1' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.url}/api/mcp/rpc`)));
  return mcp;
}

describe('context size (COMPUTE_CONTEXT_MAX_BYTES)', function () {
  this.timeout(30_000);
  let svc: TestService;
  let key: string;
  before(async () => {
    svc = await startTestService({ config: { limits: { computeContextMaxBytes: MAX, demo: { callsPerHour: 100 } } } });
    key = (await createKey(svc, await signUp(svc, 'ctx-size'), { name: 'ctx-size' })).key;
  });
  after(() => svc.close());

  it('prices a context of exactly the limit and refuses one byte more with 400 at context, naming the setting and both sizes', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const fits = await api.post<Record<string, any>>('/api/compute/price', { context: contextOf(MAX), function_id: 'fn_builtin_cost_plus' });
    expect(fits.status, fits.text).to.equal(200);
    const over = await api.post<Record<string, any>>('/api/compute/price', { context: contextOf(MAX + 1), function_id: 'fn_builtin_cost_plus' });
    expect(over.status).to.equal(400);
    expect(over.body.code).to.equal('validation_error');
    expect(over.body.issues).to.deep.include({ path: 'context', reason: `context must be at most ${MAX} bytes of JSON (COMPUTE_CONTEXT_MAX_BYTES); this one is ${MAX + 1}` });
    const router = await api.post<Record<string, any>>('/api/price-router', { context: contextOf(MAX + 1), function_name: 'cost-plus' });
    expect(router.status).to.equal(400);
    expect(router.body.issues.map((i: { path: string }) => i.path)).to.include('context');
  });

  it('counts bytes of UTF-8, not characters: a context of three-byte characters past the limit is refused', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const baseBytes = Buffer.byteLength(JSON.stringify({ current_price: 10, unit_cost: 6, note: '' }));
    let bytes = MAX + 1;
    while ((bytes - baseBytes) % 3 !== 0) bytes++;
    const wide = contextOf(bytes, '€');
    expect(JSON.stringify(wide).length).to.be.lessThan(MAX);
    const res = await api.post<Record<string, any>>('/api/compute/price', { context: wide, function_id: 'fn_builtin_cost_plus' });
    expect(res.status).to.equal(400);
    expect(res.body.issues[0].reason).to.match(new RegExp(`this one is ${bytes}$`));
  });

  it('refuses an oversized batch item in its place (items[1].context) and prices the others', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const res = await api.post<Record<string, any>>('/api/compute/batch', { items: [{ context: contextOf(MAX), function_id: 'fn_builtin_cost_plus' }, { context: contextOf(MAX + 1), function_id: 'fn_builtin_cost_plus' }] });
    expect(res.status, res.text).to.equal(200);
    const [first, second] = res.body.items as Array<Record<string, any>>;
    expect(first?.status).to.equal(200);
    expect(second?.status).to.equal(400);
    expect(second?.error.issues.map((i: { path: string }) => i.path)).to.include('items[1].context');
  });

  it('bounds the keyless demo, the verification routes and the MCP tools by the same setting', async () => {
    const api = client(svc.url);
    const demo = await api.post<Record<string, any>>('/api/public/compute/demo', { context: contextOf(MAX + 1) });
    expect(demo.status).to.equal(400);
    expect(demo.body.issues.map((i: { path: string }) => i.path)).to.include('context');
    const verify = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/price-router/verify', { context: { ...contextOf(MAX + 1), product_type: 'x' }, proposed_price: '10' });
    expect(verify.status).to.equal(400);
    expect(verify.body.issues.map((i: { path: string }) => i.path)).to.include('context');
    const mcp = await mcpClient(svc);
    try {
      for (const [name, args] of [
        ['compute_price', { context: contextOf(MAX + 1) }],
        ['verify_price', { context: contextOf(MAX + 1), proposed_price: 10 }],
      ] as const) {
        const r = (await mcp.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text: string }> };
        expect(r.isError, name).to.equal(true);
        const body = JSON.parse(r.content[0]?.text ?? '{}') as Record<string, any>;
        expect(body.code, name).to.equal('validation_error');
        expect(body.issues.map((i: { path: string }) => i.path), name).to.include('context');
      }
      const fits = (await mcp.callTool({ name: 'compute_price', arguments: { context: contextOf(MAX) } })) as { isError?: boolean };
      expect(fits.isError).to.equal(false);
    } finally {
      await mcp.close();
    }
  });
});
