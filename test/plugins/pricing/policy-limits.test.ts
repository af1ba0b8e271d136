import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { buildWorld } from '../../support/world';
import type { World } from '../../support/world';

type Api = ReturnType<typeof client>;
type Body = Record<string, any>;

const PATH = '/api/routing-policies';
/** Ids no function holds: ids are never refused on save (only names are), so they stay, each with a warning. */
const ids = (n: number, prefix = 'fn_nobody'): string[] => Array.from({ length: n }, (_, i) => `${prefix}_${String(i).padStart(3, '0')}`);

/** What one policy may name is bounded, so no policy makes every answer (its warnings, a call's trace) megabytes long. */
describe('pricing: the bounds of a routing policy', function () {
  this.timeout(60_000);
  let svc: TestService;
  let world: World;
  let a: Api;

  before(async () => {
    svc = await startTestService({ config: { engine: { threads: 1 } } });
    world = await buildWorld(svc);
    a = client(svc.url, { 'x-api-key': world.a.key });
  });
  after(() => svc.close());

  it('config.weights names at most 50 functions, as candidates and order do: 51 answer 400 at config.weights, on create and PATCH', async () => {
    const weights = (n: number) => Object.fromEntries(ids(n).map((id) => [id, 1]));
    const res = await a.post<Body>(PATH, { name: 'many weights', strategy: 'weighted', config: { weights: weights(51) } });
    expect(res.status, res.text).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    expect(res.body.issues).to.deep.equal([{ path: 'config.weights', reason: 'at most 50 functions may have a weight, got 51' }]);
    expect((await a.post(PATH, res.body.example)).status).to.equal(201);
    for (const key of ['candidates', 'order']) {
      const list = await a.post<Body>(PATH, { name: `many ${key}`, strategy: key === 'order' ? 'priority' : 'cheapest', config: { [key]: ids(51) } });
      expect(list.status, key).to.equal(400);
      expect(list.body.issues.map((i: Body) => i.path), key).to.deep.equal([`config.${key}`]);
    }

    const made = await a.post<Body>(PATH, { name: 'fifty weights', strategy: 'weighted', config: { weights: weights(50) } });
    expect(made.status, made.text).to.equal(201);
    const patched = await a.patch<Body>(`${PATH}/${made.body.policy.id as string}`, { config: { weights: weights(51) } });
    expect(patched.status, patched.text).to.equal(400);
    expect(patched.body.issues).to.deep.equal([{ path: 'config.weights', reason: 'at most 50 functions may have a weight, got 51' }]);
    // Sent back, the example changes nothing: the stored weights stay.
    expect((await a.patch(`${PATH}/${made.body.policy.id as string}`, patched.body.example)).status).to.equal(200);
  });

  it('a warning names the first 10 functions out of reach and counts the rest, however many the policy names', async () => {
    const res = await a.post<Body>(PATH, { name: 'far', strategy: 'cheapest', fallback_chain: ids(20, 'fn_fb'), config: { candidates: ids(50), order: ids(50, 'fn_order') } });
    expect(res.status, res.text).to.equal(201);
    const warnings = res.body.policy.warnings as string[];
    // In the order the policy holds them: the fallback chain first.
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.equal(`These functions are out of reach and will be skipped: ${ids(10, 'fn_fb').join(', ')} and 110 more.`);
  });
});
