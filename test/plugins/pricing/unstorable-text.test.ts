import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

type Body = Record<string, any>;

const NUL = String.fromCharCode(0);
const LONE = '\ud800';

/**
 * Text PostgreSQL cannot store, sent where it would be stored or looked up: each is 400
 * validation_error naming its path, where it used to be a 500 (functions' tags, every policy field
 * that names functions, price verification's product type) or stored mangled (descriptions, names).
 */
describe('pricing: text that cannot be stored is refused by path, never a 500', function () {
  this.timeout(60_000);
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService();
    api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'unstorable'), { name: 'k' })).key });
  });
  after(() => svc.close());

  const fn = (over: Record<string, unknown>) => ({ name: `unstorable-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 6)}`, execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.001', ...over });

  for (const [label, method, path, body, issue] of [
    ['a compute context', 'post', '/api/compute/price', { context: { product_type: `a${NUL}b`, unit_cost: 2 } }, 'context.product_type'],
    ['a keyless verification', 'post', '/api/public/price-router/verify', { context: { product_type: `a${NUL}b` }, proposed_price: 5 }, 'context.product_type'],
    ['a verification', 'post', '/api/price-router/verify', { context: { product_type: `a${LONE}b` }, proposed_price: 5 }, 'context.product_type'],
    ['a function tag', 'post', '/api/functions', fn({ tags: [`a${NUL}b`] }), 'tags.0'],
    ['a function description', 'post', '/api/functions', fn({ description: `a${NUL}b` }), 'description'],
    ['a policy fallback chain', 'post', '/api/routing-policies', { name: 'p', strategy: 'cheapest', fallback_chain: [`cost-plus${NUL}`] }, 'fallback_chain.0'],
    ['a policy fallback function', 'post', '/api/routing-policies', { name: 'p', strategy: 'cheapest', fallback_function: `cost-plus${NUL}` }, 'fallback_function'],
    ['a policy rule value', 'post', '/api/routing-policies', { name: 's', strategy: 'policy', config: { rules: [{ when: { product_type: LONE }, use: 'cost-plus' }] } }, 'config.rules.0.when.product_type'],
    ['a policy weight key', 'post', '/api/routing-policies', { name: 'w', strategy: 'weighted', config: { weights: { [`cost-plus${NUL}`]: 1 } } }, `config.weights.cost-plus${NUL}`],
  ] as const) {
    it(`refuses NUL or a lone surrogate in ${label} with 400 naming ${JSON.stringify(issue)}`, async () => {
      const res = method === 'post' ? await api.post<Body>(path, body) : await api.patch<Body>(path, body);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues[0].path).to.equal(issue);
    });
  }

  it('refuses it in a PATCH of a function too, leaving the function as it was', async () => {
    const created = await api.post<Body>('/api/functions', fn({ tags: ['fine'] }));
    expect(created.status, created.text).to.equal(201);
    const id = created.body.function.id as string;
    const res = await api.patch<Body>(`/api/functions/${id}`, { tags: [`x${NUL}`] });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues[0].path).to.equal('tags.0');
    expect((await api.get<Body>(`/api/functions/${id}`)).body.function.tags).to.deep.equal(['fine']);
  });
});
