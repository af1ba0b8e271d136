import { expect } from 'chai';
import { client } from '../../support/http';
import type { HttpResult } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';

type Body = Record<string, any>;

let seq = 0;
const fnName = (label: string) => `listing-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;
const external = (label: string, isPublic: boolean) => ({ name: fnName(label), execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.002', is_public: isPublic });

/**
 * docs/routing.md: a function is listed while public and
 * active, and its first listing fixes its commission rate; a sandbox naming a marketplace function is refused for
 * its plan (403), while what is not on the marketplace stays one 404.
 */
describe('pricing: function listings and what a sandbox reads', function () {
  this.timeout(90_000);
  let svc: TestService;
  let ownerKey = '';
  let owner: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService();
    ownerKey = (await createKey(svc, await signUp(svc, 'listing-owner'), { name: 'owner' })).key;
    owner = client(svc.url, { 'x-api-key': ownerKey });
  });
  after(() => svc?.close());

  const create = async (api: ReturnType<typeof client>, label: string, isPublic: boolean): Promise<Body> => {
    const res = await api.post<Body>('/api/functions', external(label, isPublic));
    expect(res.status, res.text).to.equal(201);
    return res.body.function as Body;
  };
  const patch = async (api: ReturnType<typeof client>, id: string, body: Body): Promise<Body> => {
    const res = await api.patch<Body>(`/api/functions/${id}`, body);
    expect(res.status, res.text).to.equal(200);
    return res.body.function as Body;
  };
  const listedAt = async (id: string): Promise<unknown> => {
    const [rows] = await svc.sequelize.query('SELECT listed_at FROM pricing_functions WHERE id = $1', { bind: [id] });
    return (rows as Array<{ listed_at: unknown }>)[0]?.listed_at;
  };

  describe('the commission rate of a listing', () => {
    it('is null on a draft created public, and fixed by the PATCH that activates it', async () => {
      const fn = await create(owner, 'public-draft', true);
      expect(fn).to.include({ status: 'draft', is_public: true, commission_pct: null });
      expect((await owner.get<Body>(`/api/functions/${fn.id}`)).body.function.commission_pct).to.equal(null);
      expect(await listedAt(fn.id as string)).to.equal(null);
      const activated = await patch(owner, fn.id, { status: 'active' });
      expect(activated).to.include({ status: 'active', is_public: true, commission_pct: '30' });
      expect(await listedAt(fn.id as string)).to.not.equal(null);
    });

    it('is fixed by the PATCH that makes an active function public, and kept through withdrawal, relisting and a new MARKETPLACE_COMMISSION_PCT', async () => {
      const active = await create(owner, 'private-active', false);
      expect((await patch(owner, active.id, { status: 'active' })).commission_pct).to.equal(null);
      expect((await patch(owner, active.id, { is_public: true })).commission_pct).to.equal('30');
      const fixedAt = await listedAt(active.id as string);
      // Made public as a draft, never listed: no rate yet (and a draft cannot be deactivated, so it stays one).
      const neverListed = await create(owner, 'public-draft-unlisted', true);
      expect((await owner.patch(`/api/functions/${neverListed.id}`, { status: 'inactive' })).status).to.equal(409);
      expect((await patch(owner, neverListed.id, { description: 'still a draft' })).commission_pct).to.equal(null);
      expect(await listedAt(neverListed.id as string)).to.equal(null);

      const changed = await startTestService({ config: { limits: { marketplaceCommissionPct: 20 } }, databaseUrl: svc.databaseUrl });
      try {
        const api = client(changed.url, { 'x-api-key': ownerKey });
        for (const step of [{ is_public: false }, { is_public: true }, { status: 'inactive' }, { status: 'active' }]) {
          expect((await patch(api, active.id, step)).commission_pct, JSON.stringify(step)).to.equal('30');
        }
        expect(await listedAt(active.id as string)).to.deep.equal(fixedAt);
        // Listed for the first time now: today's rate.
        expect((await patch(api, neverListed.id, { status: 'active' })).commission_pct).to.equal('20');
      } finally {
        await changed.close();
      }
    });
  });

  describe('a sandbox reading another workspace\'s function', () => {
    const withoutRequestId = (res: HttpResult<Body>): string => res.text.replace(/"request_id":"[^"]*"/, '"request_id":""');

    it('answers a marketplace function (public and active) 403 plan_restricted, as compute does', async () => {
      const fn = await create(owner, 'marketplace', true);
      await patch(owner, fn.id, { status: 'active' });
      const sandbox = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'listing-reader')).key });
      const priced = await sandbox.post<Body>('/api/compute/price', { context: { unit_cost: 10 }, function_id: fn.id });
      expect(priced.status, priced.text).to.equal(403);
      for (const ref of [fn.id as string, fn.name as string]) {
        const read = await sandbox.get<Body>(`/api/functions/${ref}`);
        expect(read.status, read.text).to.equal(403);
        expect(read.body).to.include({ code: 'plan_restricted', plan: 'agent_starter', reason: 'Agent Starter sandboxes cannot price with marketplace functions. A claimed workspace can.' });
        expect(read.body.next.map((n: { action: string }) => n.action)).to.deep.equal(['claim']);
        for (const field of ['error', 'code', 'plan', 'reason', 'hint', 'next']) expect(read.body[field], field).to.deep.equal(priced.body[field]);
      }
    });

    it('answers a private function, a public draft and a missing id with byte-identical 404s whose hint promises built-ins only', async () => {
      const hidden = await create(owner, 'private', false);
      await patch(owner, hidden.id, { status: 'active' });
      const publicDraft = await create(owner, 'unlisted', true);
      const sandbox = client(svc.url, { 'x-api-key': (await registerSandbox(svc, 'listing-prober')).key });
      const missing = await sandbox.get<Body>('/api/functions/fn_doesnotexist12345678');
      expect(missing.status, missing.text).to.equal(404);
      expect(missing.body).to.include({
        code: 'function_not_found',
        error: 'No pricing function with this id or name is available to you.',
        hint: 'A sandbox prices with built-in functions only until a person claims it; GET /api/functions?built_in=true lists them.',
      });
      for (const ref of [hidden.id, hidden.name, publicDraft.id] as string[]) {
        const res = await sandbox.get<Body>(`/api/functions/${ref}`);
        expect(res.status, ref).to.equal(404);
        expect(withoutRequestId(res), ref).to.equal(withoutRequestId(missing));
      }
    });
  });
});
