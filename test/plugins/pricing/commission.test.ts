import { expect } from 'chai';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';

type Body = Record<string, any>;

let seq = 0;
const uniqueName = (label: string) => `commission-${label}-${process.pid}-${Date.now().toString(36)}-${seq++}`;

/**
 * SPEC: a marketplace listing has a commission rate, default 30%; listings made earlier keep the
 * rate they were created with. A function is listed while public and active (docs/routing.md), so
 * its first activation as a public function fixes the rate. The owner reads it on every read of the
 * function, nobody else does.
 */
describe('pricing: marketplace commission on function reads', function () {
  this.timeout(60_000);
  let svc: TestService;
  let owner: ReturnType<typeof client>;
  let ownerKey = '';
  let stranger: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService();
    ownerKey = (await createKey(svc, await signUp(svc, 'seller'), { name: 'seller' })).key;
    owner = client(svc.url, { 'x-api-key': ownerKey });
    stranger = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'buyer'), { name: 'buyer' })).key });
  });
  after(() => svc.close());

  const create = async (isPublic: boolean) => {
    const res = await owner.post<Body>('/api/functions', { name: uniqueName(isPublic ? 'listed' : 'private'), execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.002', is_public: isPublic });
    expect(res.status, res.text).to.equal(201);
    return res.body.function as Body;
  };
  /** A public function activated: listed, its rate fixed. */
  const createListed = async () => {
    const fn = await create(true);
    const activated = await owner.patch<Body>(`/api/functions/${fn.id}`, { status: 'active' });
    expect(activated.status, activated.text).to.equal(200);
    return activated.body.function as Body;
  };

  it('shows the owner the commission its listing keeps on activation, read, list and update; a private function or a public draft has none yet', async () => {
    const publicDraft = await create(true);
    expect(publicDraft.commission_pct).to.equal(null);
    const listed = await createListed();
    expect(listed.commission_pct).to.equal('30');
    const read = await owner.get<Body>(`/api/functions/${listed.id}`);
    expect(read.status).to.equal(200);
    expect(read.body.function.commission_pct).to.equal('30');
    const list = await owner.get<Body>('/api/functions?built_in=false');
    expect(list.status, list.text).to.equal(200);
    expect((list.body.data as Body[]).find((f) => f.id === listed.id)?.commission_pct).to.equal('30');
    const described = await owner.patch<Body>(`/api/functions/${listed.id}`, { description: 'still listed' });
    expect(described.body.function.commission_pct).to.equal('30');

    const unlisted = await create(false);
    expect(unlisted.commission_pct).to.equal(null);
    expect((await owner.get<Body>(`/api/functions/${unlisted.id}`)).body.function.commission_pct).to.equal(null);
    // Built-ins carry no commission.
    expect((await owner.get<Body>('/api/functions/fn_builtin_cost_plus')).body.function).to.not.have.property('commission_pct');
  });

  it("never shows another workspace's commission on its listed function", async () => {
    const listed = await createListed();
    const seen = await stranger.get<Body>(`/api/functions/${listed.id}`);
    expect(seen.status, seen.text).to.equal(200);
    expect(seen.body.function.label).to.equal('marketplace');
    expect(seen.body.function).to.not.have.property('commission_pct');
    const list = await stranger.get<Body>('/api/functions?built_in=false');
    const entry = (list.body.data as Body[]).find((f) => f.id === listed.id);
    expect(entry).to.not.equal(undefined);
    expect(entry).to.not.have.property('commission_pct');
  });

  it('keeps the rate a listing was made with after the operator changes MARKETPLACE_COMMISSION_PCT; a listing made after gets the new one', async () => {
    const early = await createListed();
    const laterPrivate = await create(false);
    const laterDraft = await create(true);
    const changed = await startTestService({ config: { limits: { marketplaceCommissionPct: 20 } }, databaseUrl: svc.databaseUrl });
    try {
      const api = client(changed.url, { 'x-api-key': ownerKey });
      expect((await api.get<Body>(`/api/functions/${early.id}`)).body.function.commission_pct).to.equal('30');
      // Listing a private function now takes today's rate, for good, and so does activating a public draft made before.
      const listedNow = await api.patch<Body>(`/api/functions/${laterPrivate.id}`, { is_public: true, status: 'active' });
      expect(listedNow.status, listedNow.text).to.equal(200);
      expect(listedNow.body.function.commission_pct).to.equal('20');
      expect((await api.patch<Body>(`/api/functions/${laterDraft.id}`, { status: 'active' })).body.function.commission_pct).to.equal('20');
      const created = await api.post<Body>('/api/functions', { name: uniqueName('new'), execution_type: 'external_api', endpoint_url: 'https://pricing.example.com/price', cost_per_unit: '0.002', is_public: true });
      expect(created.body.function.commission_pct).to.equal(null);
      expect((await api.patch<Body>(`/api/functions/${created.body.function.id}`, { status: 'active' })).body.function.commission_pct).to.equal('20');
    } finally {
      await changed.close();
    }
  });
});
