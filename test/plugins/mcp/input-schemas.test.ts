import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

// The validator the official SDK ships (ajv): what an MCP client checking arguments against inputSchema would run.
async function validatorFor(schema: Record<string, unknown>) {
  const { AjvJsonSchemaValidator } = await import('@modelcontextprotocol/sdk/validation/ajv');
  return new AjvJsonSchemaValidator().getValidator(schema);
}

describe('MCP tools publish in inputSchema what they refuse', function () {
  this.timeout(60_000);
  let svc: TestService;
  let key: string;
  const schemas = new Map<string, Record<string, unknown>>();

  const rpc = async (body: unknown): Promise<Record<string, any>> => {
    const res = await fetch(`${svc.url}/api/mcp/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': key },
      body: JSON.stringify(body),
    });
    expect(res.status).to.equal(200);
    return (await res.json()) as Record<string, any>;
  };
  /** The tool's answer to `args`: the error body of a refusal, or null when it ran. */
  const refusal = async (name: string, args: unknown): Promise<Record<string, any> | null> => {
    const { result } = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
    return result.isError ? (JSON.parse(result.content[0].text as string) as Record<string, any>) : null;
  };

  before(async () => {
    svc = await startTestService();
    key = (await createKey(svc, await signUp(svc, 'mcp-schemas'), { name: 'mcp-schemas' })).key;
    const listed = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    for (const tool of listed.result.tools as Array<{ name: string; inputSchema: Record<string, unknown> }>) schemas.set(tool.name, tool.inputSchema);
  });
  after(() => svc.close());

  // Not listed: what JSON Schema cannot state, and the tools still refuse: a context over COMPUTE_CONTEXT_MAX_BYTES, a
  // number whose plain decimal form has more than 18 digits after the point (1e-19) and one past 2^53 that arrives
  // rounded (123456789012345678; send a decimal string).

  /** Each refused argument set is refused by the tool (validation_error at `path`) and by the published schema; each valid one passes both. */
  async function expectAgreement(name: string, refused: Array<[string, unknown]>, valid: unknown[]): Promise<void> {
    const schema = schemas.get(name);
    expect(schema, name).to.be.an('object');
    const validate = await validatorFor(schema as Record<string, unknown>);
    for (const [path, args] of refused) {
      const said = JSON.stringify(args);
      const body = await refusal(name, args);
      expect(body?.code, said).to.equal('validation_error');
      expect((body?.issues as Array<{ path: string }>).map((i) => i.path), said).to.include(path);
      expect(validate(args).valid, `${said} passes the published inputSchema`).to.equal(false);
    }
    for (const args of valid) {
      const said = JSON.stringify(args);
      expect(validate(args), said).to.deep.include({ valid: true });
      const body = await refusal(name, args);
      expect(body?.code, said).to.not.equal('validation_error');
    }
  }

  // Refused on the context keys SPEC names, in the compute context every pricing tool shares.
  const contextRefusals = (extra: Record<string, unknown>): Array<[string, unknown]> =>
    (
      [
        ['context.current_price', { current_price: 'abc' }],
        ['context.current_price', { current_price: '12' }],
        ['context.current_price', { current_price: -5 }],
        ['context.current_price', { current_price: null }],
        ['context.product_type', { product_type: 5 }],
        ['context.currency', { currency: 5 }],
        ['context.currency', { currency: 'US' }],
        ['context.currency', { currency: 'DOLLARS' }],
        ['context', 'a string'],
        ['context', [1, 2]],
      ] as Array<[string, unknown]>
    ).map(([path, context]) => [path, { context, ...extra }]);

  it('compute_price: every context key value it refuses is refused by a JSON Schema validator over its inputSchema, and valid contexts pass both', async () => {
    const pin = { function_id: 'fn_builtin_cost_plus' };
    await expectAgreement('compute_price', contextRefusals(pin), [
      { context: { unit_cost: 3, currency: 'USD' }, ...pin },
      // Keys SPEC does not name pass as sent, and the named ones at their bounds.
      { context: { product_type: 'coffee', current_price: 0, currency: 'usdc', unit_cost: 3, note: { any: ['thing'] } }, ...pin },
    ]);
    // The routing rules the tool refuses as well, and the arguments they leave alone.
    const priced = { current_price: 1 };
    await expectAgreement(
      'compute_price',
      [
        ['routing_preference', { context: priced, function_id: 'fn_builtin_charm', routing_preference: 'cheapest' }],
        ['function_id', { context: priced, routing_preference: 'explicit' }],
        ['function_id', { context: priced, function_id: '   ' }],
      ],
      [{ context: priced, function_id: 'fn_builtin_charm', routing_preference: 'explicit' }, { context: priced, function_id: ' fn_builtin_charm ' }, { context: priced, routing_preference: 'cheapest' }],
    );
    const context = (schemas.get('compute_price') as Record<string, any>).properties.context as Record<string, any>;
    expect(context.additionalProperties, 'other keys are allowed').to.deep.equal({});
    expect(context.properties).to.deep.include({ product_type: { type: 'string' }, current_price: { type: 'number', minimum: 0 } });
  });

  it('compute_price: its routing rules (a pin routes explicitly, explicit routing needs a pin, a blank function_id) are stated in the OpenAPI request bodies that share them too, and the documented examples pass them', async () => {
    const doc = (await (await fetch(`${svc.url}/api/openapi.json?format=json`)).json()) as Record<string, any>;
    const resolved = (schema: Record<string, any>): Record<string, any> => (schema.$ref ? doc.components.schemas[(schema.$ref as string).split('/').pop() as string] : schema);
    const bodies: Array<[string, Record<string, any>]> = ['/api/compute/price', '/api/public/compute/demo', '/api/price-router'].map((path) => [path, resolved(doc.paths[path].post.requestBody.content['application/json'].schema)]);
    bodies.push(['BatchItem', doc.components.schemas.BatchItem]);
    const priced = { current_price: 1 };
    for (const [where, schema] of bodies) {
      const validate = await validatorFor(schema);
      for (const refused of [
        { context: priced, function_id: 'fn_builtin_charm', routing_preference: 'cheapest' },
        { context: priced, routing_preference: 'explicit' },
        { context: priced, function_id: '   ' },
      ]) {
        expect(validate(refused).valid, `${where}: ${JSON.stringify(refused)}`).to.equal(false);
      }
      for (const example of [{ context: { product_type: 'coffee', currency: 'USD', current_price: 4.5 } }, { context: priced, function_id: 'fn_builtin_charm', routing_preference: 'explicit' }, { context: priced, routing_preference: 'cheapest' }]) {
        expect(validate(example), `${where}: ${JSON.stringify(example)}`).to.deep.include({ valid: true });
      }
    }
    const router = validatorFor(bodies[2]?.[1] as Record<string, unknown>);
    expect((await router)({ context: priced, function_name: 'cost-plus', routing_preference: 'explicit' }).valid).to.equal(true);
    expect((await router)({ context: priced, function_name: 'cost-plus', function_id: 'fn_builtin_charm' }).valid).to.equal(false);
  });

  it('verify_price: every context key, proposed_price and price value it refuses is refused by a JSON Schema validator over its inputSchema (exactly one of the two prices), and valid arguments pass both', async () => {
    const proposed = { proposed_price: '10.50' };
    const widget = { product_type: 'widget', currency: 'USD' };
    await expectAgreement(
      'verify_price',
      [
        ...contextRefusals(proposed),
        ['context.product_type', { context: { product_type: 'x'.repeat(101) }, ...proposed }],
        ['context.current_price', { context: { ...widget, current_price: 1e18 }, ...proposed }],
        ...['unit_cost', 'min_price', 'max_price'].flatMap((k): Array<[string, unknown]> => [
          [`context.${k}`, { context: { ...widget, [k]: -1 }, ...proposed }],
          [`context.${k}`, { context: { ...widget, [k]: 0 }, ...proposed }],
          [`context.${k}`, { context: { ...widget, [k]: '0.00' }, ...proposed }],
          [`context.${k}`, { context: { ...widget, [k]: 'lots' }, ...proposed }],
          [`context.${k}`, { context: { ...widget, [k]: '-3.5' }, ...proposed }],
          [`context.${k}`, { context: { ...widget, [k]: true }, ...proposed }],
        ]),
        ...[0, -1, '0.00', '-3.5', 'abc', '20.', '1e3', true, '1'.padEnd(30, '0')].map((p): [string, unknown] => ['proposed_price', { context: widget, proposed_price: p }]),
        ['price', { context: widget, price: -2 }],
        ['price', { context: widget, proposed_price: '20', price: '20' }],
        ['proposed_price', { context: widget }],
      ],
      [
        { context: { ...widget, unit_cost: '1.2', min_price: 1, max_price: '20', current_price: 9.5, region: 'eu' }, proposed_price: '10.50' },
        { context: widget, price: 10 },
        { context: widget, proposed_price: 0.01 },
      ],
    );
  });
});
