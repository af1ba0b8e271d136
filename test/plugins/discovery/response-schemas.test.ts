import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { z } from 'zod';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, mintToken, registerSandbox, signUp } from '../../support/world';
import { declaredSchema, expectFitsDeclared } from '../../support/response-schema';

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

/** The priced and verify routes whose 200 bodies the OpenAPI document describes, by route id. */
const ROUTES = { 'compute.price': '/api/compute/price', 'router.price': '/api/price-router', 'compute.batch': '/api/compute/batch', 'demo.compute': '/api/public/compute/demo', 'verify.price': '/api/price-router/verify', 'demo.verify': '/api/public/price-router/verify' } as const;
type RouteId = keyof typeof ROUTES;

describe('OpenAPI response schemas of the priced and verify routes', function () {
  this.timeout(90_000);
  let svc: TestService;
  let key: string;

  before(async () => {
    svc = await startTestService({ config: lenient });
    key = (await createKey(svc, await signUp(svc, 'schemas'), { name: 'schemas' })).key;
    // Evidence for a verification: five other workspaces' observations of "gadget" (each counts once, with the weight of its quotes: five alike are the minimum for a band).
    for (const [label, amounts] of [
      ['shop-a', ['19.50', '20.50']],
      ['shop-b', ['20.00', '20.20']],
      ['shop-c', ['19.80', '20.30']],
      ['shop-d', ['19.90', '20.05']],
      ['shop-e', ['19.95', '20.15']],
    ] as const) {
      const other = (await createKey(svc, await signUp(svc, label), { name: label })).key;
      const res = await client(svc.url, { 'x-api-key': other }).post('/api/data/observations', {
        observations: amounts.map((amount, i) => ({ product_type: 'gadget', currency: 'USD', amount, observed_at: new Date(Date.now() - (i + 1) * 3_600_000).toISOString(), source: label })),
      });
      expect(res.status, res.text).to.equal(201);
    }
  });
  after(() => svc.close());

  const declared = (id: RouteId): z.ZodObject => declaredSchema(svc, id);
  const expectFits = (id: RouteId, body: unknown): void => expectFitsDeclared(svc, id, body);

  it('a priced call with a key (compute and router) fits the declared schema, and so does its replay under an Idempotency-Key', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const routed = await api.post<Record<string, any>>('/api/compute/price', { context: { unit_cost: 7, current_price: 12 }, routing_preference: 'cheapest' });
    expect(routed.status, routed.text).to.equal(200);
    expect(routed.body).to.have.property('savings');
    expectFits('compute.price', routed.body);
    const router = await api.post<Record<string, any>>('/api/price-router', { context: { current_price: 12 }, function_name: 'anchored-adjustment' });
    expect(router.status, router.text).to.equal(200);
    expectFits('router.price', router.body);

    const headers = { 'idempotency-key': `schemas-${Date.now()}` };
    const first = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 9 } }, headers);
    expect(first.status, first.text).to.equal(200);
    const replay = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 9 } }, headers);
    expect(replay.status, replay.text).to.equal(200);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.body).to.have.property('idempotent_replay');
    expectFits('compute.price', first.body);
    expectFits('compute.price', replay.body);
  });

  it('a sandbox\'s priced call, with remaining, fits the declared schema', async () => {
    const sandbox = await registerSandbox(svc, 'schemas-sandbox');
    const res = await client(svc.url, { 'x-api-key': sandbox.key }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 5 } });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.remaining).to.have.all.keys('daily_compute_calls', 'request_rate');
    expect(res.body.receipt).to.have.property('hint');
    expectFits('compute.price', res.body);
  });

  it('a batch with one good and one bad item fits the declared schema', async () => {
    const res = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/compute/batch', { items: [{ context: { current_price: 10 } }, { context: { current_price: 'ten' } }] }, { 'idempotency-key': `batch-${Date.now()}` });
    expect(res.status, res.text).to.equal(200);
    expect(res.body.summary).to.deep.equal({ total: 2, succeeded: 1, failed: 1, replayed: 0 });
    expect(res.body.items[1].error).to.include({ code: 'validation_error' });
    expectFits('compute.batch', res.body);
  });

  it('the keyless demo fits the declared schema, with and without a credential sent along', async () => {
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 12 } });
    expect(demo.status, demo.text).to.equal(200);
    expect(demo.body).to.include({ demo: true });
    expectFits('demo.compute', demo.body);
    const withKey = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/public/compute/demo', { context: { current_price: 12 } });
    expect(withKey.body).to.have.property('credential_ignored');
    expectFits('demo.compute', withKey.body);
  });

  it('a verification with evidence, one without, and the keyless one fit the declared schemas', async () => {
    const api = client(svc.url, { 'x-api-key': key });
    const withEvidence = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'gadget' }, proposed_price: '20.00' });
    expect(withEvidence.status, withEvidence.text).to.equal(200);
    expect(withEvidence.body.reference).to.not.equal(null);
    expect(withEvidence.body.band).to.have.property('scale');
    expectFits('verify.price', withEvidence.body);
    const without = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'nothing-observed', unit_cost: 3 }, proposed_price: 5 });
    expect(without.status, without.text).to.equal(200);
    expect(without.body).to.include({ verdict: 'unknown' });
    expect(without.body).to.have.property('hint');
    expectFits('verify.price', without.body);
    const demo = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'gadget' }, price: 21 });
    expect(demo.status, demo.text).to.equal(200);
    expect(demo.body).to.include({ demo: true });
    expectFits('demo.verify', demo.body);
  });

  it("GET /api/me fits its declared schema for a person's key, a sandbox key, a token, a session and a person token", async () => {
    const schema = svc.routes.find('me.read')?.responses?.[200]?.schema;
    expect(schema).to.be.instanceOf(z.ZodObject);
    const strict = (schema as z.ZodObject).strict();
    const person = await signUp(svc, 'schemas-me');
    const sandbox = await registerSandbox(svc, 'schemas-me-sandbox');
    const token = await mintToken(svc, sandbox.key);
    const credentials: Array<Record<string, string>> = [{ 'x-api-key': key }, { 'x-api-key': sandbox.key }, { cookie: person.cookie }, { authorization: `Bearer ${person.token}` }, { authorization: `Bearer ${token}` }];
    for (const headers of credentials) {
      const me = await client(svc.url, headers).get<Record<string, any>>('/api/me');
      expect(me.status, me.text).to.equal(200);
      const parsed = strict.safeParse(me.body);
      expect(parsed.success, parsed.success ? '' : `${Object.keys(headers).join(',')}: ${JSON.stringify(parsed.error.issues)}`).to.equal(true);
    }
  });

  it('names each shared schema once: no two schemas in the source carry the same OpenAPI component id (the document would silently keep one)', () => {
    const root = path.resolve(__dirname, '../../../..');
    const sources = ['core', 'engine', 'plugins'].flatMap((dir) => (readdirSync(path.join(root, dir), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => path.join(root, dir, f)));
    const ids = sources.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/\.meta\(\{\s*id:\s*'([^']+)'/g)].map((m) => `${m[1]} (${path.relative(root, file)})`));
    expect(ids.length).to.be.greaterThan(20);
    const byId = new Map<string, string[]>();
    for (const entry of ids) {
      const id = entry.split(' ')[0] as string;
      byId.set(id, [...(byId.get(id) ?? []), entry]);
    }
    expect([...byId.values()].filter((where) => where.length > 1)).to.deep.equal([]);
  });

  it('the create routes that keep an Idempotency-Key declare the header in the OpenAPI document', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    for (const path of ['/api/api-keys', '/api/functions', '/api/routing-policies']) {
      const params = (doc.paths[path].post.parameters ?? []).filter((p: { in: string; name: string }) => p.in === 'header' && p.name === 'idempotency-key');
      expect(params, path).to.have.length(1);
      expect(params[0].description, path).to.match(/Idempotent-Replayed: true/);
    }
  });

  it('a field the body has and the schema lacks fails the check', () => {
    expect(declared('compute.price').safeParse({ undocumented: true }).success).to.equal(false);
  });

  it('the OpenAPI document describes each route\'s 200 body with its declared fields, and the Idempotency-Key header where the route reads it', async () => {
    const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
    const resolve = (s: Record<string, any>): Record<string, any> => (typeof s.$ref === 'string' ? doc.components.schemas[s.$ref.split('/').pop() as string] : s);
    for (const [id, path] of Object.entries(ROUTES) as Array<[RouteId, string]>) {
      const op = doc.paths[path].post;
      const schema = resolve(op.responses['200'].content['application/json'].schema);
      expect(Object.keys(schema.properties ?? {}).sort(), id).to.deep.equal(Object.keys(declared(id).shape).sort());
      const params = (op.parameters ?? []).filter((p: { in: string; name: string }) => p.in === 'header' && p.name === 'idempotency-key');
      expect(params, id).to.have.length(['compute.price', 'router.price', 'compute.batch', 'verify.price'].includes(id) ? 1 : 0);
    }
  });
});
