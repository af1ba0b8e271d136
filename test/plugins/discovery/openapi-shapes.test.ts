import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { expectFitsDeclared } from '../../support/response-schema';
import { createKey, mintToken, registerSandbox, signUp } from '../../support/world';

type Body = Record<string, any>;

/**
 * Shapes the service knows, typed in the OpenAPI document instead of left open (a generated client
 * would make them `unknown`): request bodies, fields of answers, the common Error shape.
 */
describe('OpenAPI: known shapes typed', function () {
  this.timeout(60_000);
  let svc: TestService;
  let doc: Body;
  let key: string;
  /** A schema, or the component its $ref names. */
  const resolve = (s: Body): Body => (typeof s.$ref === 'string' ? (doc.components.schemas[s.$ref.split('/').pop() as string] as Body) : s);
  /** The JSON request body schema of an operation. */
  const requestSchema = (path: string, method = 'post'): Body => doc.paths[path][method].requestBody.content['application/json'].schema;

  before(async () => {
    svc = await startTestService();
    doc = (await client(svc.url).get<Body>('/api/openapi.json?format=json')).body;
    key = (await createKey(svc, await signUp(svc, 'shapes'), { name: 'shapes' })).key;
  });
  after(() => svc.close());

  it('documents a batch item as the BatchItem schema (no catch-all branch), while an invalid item is still answered in its place under 200', async () => {
    const items = requestSchema('/api/compute/batch').properties.items;
    expect(items.description).to.match(/fails validation is answered in its place with its error/);
    const branches: Body[] = items.items.anyOf ?? [items.items];
    expect(branches.map((b) => b.$ref)).to.deep.equal(['#/components/schemas/BatchItem']);
    const item = resolve(branches[0] as Body);
    expect(item).to.include({ type: 'object', additionalProperties: false });
    expect(item.required).to.deep.equal(['context']);
    expect(Object.keys(item.properties)).to.have.members(['context', 'function_id', 'routing_preference']);

    const res = await client(svc.url, { 'x-api-key': key }).post<Body>('/api/compute/batch', { items: [{ context: { current_price: 3 } }, 'not an item'] });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.items.map((i: { status: number }) => i.status)).to.deep.equal([200, 400]);
    expect(res.body.items[1].error.code).to.equal('validation_error');
  });

  it("types GET /api/me's token fields as the route answers them: expires_at a date-time, key_id the key's id", async () => {
    const token = resolve(doc.paths['/api/me'].get.responses['200'].content['application/json'].schema).properties.token;
    expect(token.properties.expires_at).to.include({ type: 'string', format: 'date-time' });
    expect(token.properties.key_id).to.include({ type: 'string' });
    expect(token.properties.expires_at.description).to.be.a('string').and.not.be.empty;
    expect(token.properties.key_id.description).to.be.a('string').and.not.be.empty;
    expect(token.required).to.have.members(['expires_at', 'key_id']);

    // An agent key is exchanged for a token (a person's key is used directly).
    const agent = await registerSandbox(svc, 'shapes-token');
    const me = await client(svc.url, { authorization: `Bearer ${await mintToken(svc, agent.key)}` }).get<Body>('/api/me');
    expect(me.status, me.text).to.equal(200);
    expect(me.body.token.key_id).to.equal(agent.keyId);
    expect(Date.parse(me.body.token.expires_at)).to.be.greaterThan(Date.now());
    expectFitsDeclared(svc, 'me.read', me.body);
  });
});
