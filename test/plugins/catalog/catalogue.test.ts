import { expect } from 'chai';
import type { Pool } from 'pg';
import { TOKENS } from '../../../core/tokens';
import { BUILTINS } from '../../../engine';
import { client } from '../../support/http';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, registerSandbox, signUp } from '../../support/world';
import { countQueries, createFunction, lenient } from './helpers';

interface Entry {
  id: string;
  name: string;
  description: string;
  tags: string[];
  cost_per_unit: string;
  cost_multiplier: string;
  average_latency_ms: number | 'no data';
  label: 'built-in' | 'yours' | 'marketplace';
  built_in: boolean;
  status: string;
}

interface ListBody {
  object: string;
  data: Entry[];
  has_more: boolean;
  next_cursor: string | null;
  limit: number;
}

const BUILTIN_IDS = BUILTINS.map((b) => b.id).sort();

describe('catalog: function catalogue', function () {
  this.timeout(60_000);
  let svc: TestService;
  /** Alice: owns a private draft, a public active and a public draft function. */
  let aliceKey: string;
  /** Bob: another workspace with a private active function and a public active one. */
  let bobKey: string;
  let sandboxKey: string;
  let alicePrivate: { id: string; name: string };
  let alicePublic: { id: string; name: string };
  let alicePublicDraft: { id: string; name: string };
  let bobPrivate: { id: string; name: string };
  let bobPublic: { id: string; name: string };

  before(async () => {
    svc = await startTestService({ config: { ...lenient, engine: { cacheTtlMs: 0 } } });
    const alice = await signUp(svc, 'cat-alice');
    const bob = await signUp(svc, 'cat-bob');
    aliceKey = (await createKey(svc, alice, { name: 'catalogue' })).key;
    bobKey = (await createKey(svc, bob, { name: 'catalogue' })).key;
    sandboxKey = (await registerSandbox(svc, 'catalogue-agent')).key;
    alicePrivate = await createFunction(svc, aliceKey, { label: 'alice-private', status: 'draft', tags: ['retail'] });
    alicePublic = await createFunction(svc, aliceKey, { label: 'alice-public', isPublic: true, description: 'Seasonal markdowns for FASHION retailers', tags: ['Retail', 'seasonal'] });
    alicePublicDraft = await createFunction(svc, aliceKey, { label: 'alice-public-draft', isPublic: true, status: 'draft' });
    bobPrivate = await createFunction(svc, bobKey, { label: 'bob-private', tags: ['retail'] });
    bobPublic = await createFunction(svc, bobKey, { label: 'bob-public', isPublic: true, tags: ['travel'] });
  });
  after(() => svc.close());

  const list = async (query = '', headers: Record<string, string> = {}) => {
    const res = await client(svc.url).get<ListBody>(`/api/catalog${query}`, headers);
    expect(res.status, res.text).to.equal(200);
    return res.body;
  };
  const ids = (body: ListBody) => body.data.map((e) => e.id);

  it('shows each entry with name, description, tags, cost per unit, cost multiplier, average latency and its label', async () => {
    const body = await list('?limit=100');
    expect(body).to.include({ object: 'list', has_more: false, next_cursor: null, limit: 100 });
    const cost = body.data.find((e) => e.id === 'fn_builtin_cost_plus');
    expect(cost).to.include({ name: 'cost-plus', cost_per_unit: '0.001', cost_multiplier: '1', label: 'built-in', built_in: true });
    expect(cost?.description).to.be.a('string').and.not.equal('');
    expect(cost?.tags).to.deep.equal(['cost', 'margin', 'cold-start']);
    for (const e of body.data) {
      expect(e).to.include.keys('id', 'name', 'description', 'tags', 'cost_per_unit', 'cost_multiplier', 'average_latency_ms', 'label', 'built_in');
      expect(e.label).to.equal(e.built_in ? 'built-in' : 'marketplace');
    }
  });

  it('labels every built-in function as built-in and lists them first', async () => {
    const body = await list('?limit=100', { 'x-api-key': aliceKey });
    const builtins = body.data.filter((e) => e.built_in);
    expect(builtins.map((e) => e.id).sort()).to.deep.equal(BUILTIN_IDS);
    for (const e of builtins) expect(e.label).to.equal('built-in');
    expect(body.data.slice(0, builtins.length).every((e) => e.built_in)).to.equal(true);
  });

  it('shows average latency as "no data" until the function is timed, then as a number of milliseconds', async () => {
    const before = await client(svc.url).get<{ function: Entry }>('/api/catalog/fn_builtin_charm');
    expect(before.status).to.equal(200);
    expect(before.body.function.average_latency_ms).to.equal('no data');
    const computed = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 10.2, currency: 'USD' }, function_id: 'fn_builtin_charm' }, { 'x-api-key': aliceKey });
    expect(computed.status, computed.text).to.equal(200);
    const after = await client(svc.url).get<{ function: Entry }>('/api/catalog/fn_builtin_charm');
    expect(after.body.function.average_latency_ms).to.be.a('number').and.to.be.greaterThan(0);
    const listed = (await list('?search=charm')).data.find((e) => e.id === 'fn_builtin_charm');
    expect(listed?.average_latency_ms).to.equal(after.body.function.average_latency_ms);
  });

  describe('search and tag filters', () => {
    it('searches name, description and tags, case-insensitively', async () => {
      expect(ids(await list('?search=ELASTICITY'))).to.deep.equal(['fn_builtin_elasticity']);
      // description only ("observed competitor prices") and tag ("competitors")
      expect(ids(await list('?search=Competitor'))).to.deep.equal(['fn_builtin_competitive']);
      // tag only
      expect(ids(await list('?search=inventory'))).to.deep.equal(['fn_builtin_anchored']);
      expect(ids(await list('?search=fashion'))).to.deep.equal([alicePublic.id]);
      expect(ids(await list('?search=no-such-thing-anywhere'))).to.deep.equal([]);
    });

    it('filters on tags given repeated or as a comma list; a function must carry every tag (case-insensitive)', async () => {
      expect(ids(await list('?tag=cold-start'))).to.have.members(['fn_builtin_cost_plus', 'fn_builtin_anchored']);
      expect(ids(await list('?tag=COLD-START,cost'))).to.deep.equal(['fn_builtin_cost_plus']);
      expect(ids(await list('?tag=cold-start&tag=inventory'))).to.deep.equal(['fn_builtin_anchored']);
      expect(ids(await list('?tag=retail'))).to.deep.equal([alicePublic.id]);
      expect(ids(await list('?tag=retail&search=seasonal'))).to.deep.equal([alicePublic.id]);
      expect(ids(await list('?tag=retail,travel'))).to.deep.equal([]);
    });

    it('refuses more than 20 tags with the same message whether repeated or as a comma list', async () => {
      const tags = Array.from({ length: 21 }, (_, i) => `t${i}`);
      for (const query of [tags.map((t) => `tag=${t}`).join('&'), `tag=${tags.join(',')}`, `tag=${tags.slice(0, 11).join(',')}&tag=${tags.slice(11).join(',')}`]) {
        const res = await client(svc.url).get<Record<string, any>>(`/api/catalog?${query}`);
        expect(res.status, query).to.equal(400);
        expect(res.body.error, query).to.equal('At most 20 tags can be filtered on.');
        expect(res.body.issues, query).to.deep.equal([{ path: 'tag', reason: 'at most 20 tags' }]);
      }
      expect((await client(svc.url).get(`/api/catalog?${tags.slice(0, 20).map((t) => `tag=${t}`).join('&')}`)).status).to.equal(200);
    });

    it('applies filters to what the caller can reach', async () => {
      expect(ids(await list('?tag=retail', { 'x-api-key': aliceKey }))).to.have.members([alicePrivate.id, alicePublic.id]);
      expect(ids(await list('?tag=retail', { 'x-api-key': bobKey }))).to.have.members([bobPrivate.id, alicePublic.id]);
      expect(ids(await list('?tag=retail', { 'x-api-key': sandboxKey }))).to.deep.equal([]);
    });

    it('pages through the catalogue with the cursor, every entry once', async () => {
      const all = ids(await list('?limit=100', { 'x-api-key': aliceKey }));
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: ListBody = await list(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { 'x-api-key': aliceKey });
        expect(page.data.length).to.be.at.most(2);
        seen.push(...ids(page));
        cursor = page.next_cursor;
        expect(page.has_more).to.equal(cursor !== null);
      } while (cursor);
      expect(seen).to.deep.equal(all);
    });

    it('refuses a bad limit or a cursor it did not issue', async () => {
      const bad = await client(svc.url).get<Record<string, any>>('/api/catalog?limit=0');
      expect(bad.status).to.equal(400);
      expect(bad.body.code).to.equal('validation_error');
      const cursor = await client(svc.url).get<Record<string, any>>('/api/catalog?cursor=nonsense');
      expect(cursor.status).to.equal(400);
      expect(cursor.body.issues[0].path).to.equal('cursor');
      // Decodable, but no place in this list (an empty page before): refused as any cursor not issued here.
      for (const sort of ['zzz', 3, null]) {
        const forged = Buffer.from(JSON.stringify([sort, 'x'])).toString('base64url');
        for (const path of ['/api/catalog', '/api/functions', '/api/routing/health']) {
          const res = await client(svc.url, { 'x-api-key': aliceKey }).get<Record<string, any>>(`${path}?cursor=${forged}`);
          expect(res.status, `${path} ${String(sort)}: ${res.text}`).to.equal(400);
          expect(res.body.issues).to.deep.equal([{ path: 'cursor', reason: 'not a valid cursor' }]);
        }
      }
    });
  });

  describe('reachability', () => {
    it('without a credential lists the built-ins and the active public marketplace functions', async () => {
      const body = await list('?limit=100');
      const got = ids(body);
      expect(got).to.include.members([...BUILTIN_IDS, alicePublic.id, bobPublic.id]);
      expect(got).not.to.include.members([alicePrivate.id]);
      for (const hidden of [alicePrivate.id, alicePublicDraft.id, bobPrivate.id]) expect(got).not.to.include(hidden);
      expect(body.data.find((e) => e.id === alicePublic.id)?.label).to.equal('marketplace');
    });

    it('with a key lists built-ins, the workspace\'s own functions (any status) as yours, and public ones as marketplace', async () => {
      const body = await list('?limit=100', { 'x-api-key': aliceKey });
      const got = ids(body);
      expect(got).to.include.members([...BUILTIN_IDS, alicePrivate.id, alicePublic.id, alicePublicDraft.id, bobPublic.id]);
      expect(got).not.to.include(bobPrivate.id);
      const label = (id: string) => body.data.find((e) => e.id === id)?.label;
      expect(label(alicePrivate.id)).to.equal('yours');
      expect(label(alicePublic.id)).to.equal('yours');
      expect(label(bobPublic.id)).to.equal('marketplace');
      expect(body.data.find((e) => e.id === alicePrivate.id)?.status).to.equal('draft');
    });

    it('another workspace sees neither the private function nor the public draft', async () => {
      const got = ids(await list('?limit=100', { 'x-api-key': bobKey }));
      expect(got).not.to.include(alicePrivate.id);
      expect(got).not.to.include(alicePublicDraft.id);
      expect(got).to.include.members([alicePublic.id, bobPrivate.id]);
    });

    it('an unclaimed sandbox sees built-ins only', async () => {
      const got = ids(await list('?limit=100', { 'x-api-key': sandboxKey }));
      expect(got.sort()).to.deep.equal(BUILTIN_IDS);
    });

    it('reads one entry by id or name, and answers a function out of reach with the identical 404 as a missing one', async () => {
      const own = await client(svc.url).get<{ function: Entry }>(`/api/catalog/${alicePrivate.id}`, { 'x-api-key': aliceKey });
      expect(own.status).to.equal(200);
      expect(own.body.function).to.include({ id: alicePrivate.id, label: 'yours', built_in: false });
      const byName = await client(svc.url).get<{ function: Entry }>('/api/catalog/cost-plus');
      expect(byName.body.function).to.include({ id: 'fn_builtin_cost_plus', label: 'built-in' });

      const strip = (b: Record<string, unknown>) => ({ ...b, request_id: undefined });
      const missing = await client(svc.url).get<Record<string, unknown>>('/api/catalog/fn_doesnotexist12345678', { 'x-api-key': bobKey });
      expect(missing.status).to.equal(404);
      expect(missing.body.code).to.equal('function_not_found');
      const outOfReach = [
        await client(svc.url).get<Record<string, unknown>>(`/api/catalog/${alicePrivate.id}`, { 'x-api-key': bobKey }),
        await client(svc.url).get<Record<string, unknown>>(`/api/catalog/${alicePrivate.name}`, { 'x-api-key': bobKey }),
        await client(svc.url).get<Record<string, unknown>>(`/api/catalog/${alicePublicDraft.id}`, { 'x-api-key': bobKey }),
        await client(svc.url).get<Record<string, unknown>>(`/api/catalog/${alicePrivate.id}`),
      ];
      for (const res of outOfReach) {
        expect(res.status).to.equal(404);
        expect(strip(res.body)).to.deep.equal(strip(missing.body));
      }
      expect(JSON.stringify(outOfReach.map((r) => r.body))).not.to.contain(alicePrivate.name);
    });

    it('answers a sandbox reading a marketplace function (public and active: nothing is revealed) 403 plan_restricted, as GET /api/functions/{id} does', async () => {
      const asSandbox = { 'x-api-key': sandboxKey };
      const entry = await client(svc.url).get<Record<string, any>>(`/api/catalog/${bobPublic.id}`, asSandbox);
      const fn = await client(svc.url).get<Record<string, any>>(`/api/functions/${bobPublic.id}`, asSandbox);
      expect(entry.status, entry.text).to.equal(403);
      expect(entry.body).to.include({ code: 'plan_restricted', plan: 'agent_starter' });
      for (const field of ['error', 'code', 'plan', 'reason', 'hint', 'next']) expect(entry.body[field], field).to.deep.equal(fn.body[field]);
      // A private one of another workspace stays the 404 of a missing one, whose hint says what a sandbox sees.
      const hidden = await client(svc.url).get<Record<string, any>>(`/api/catalog/${bobPrivate.id}`, asSandbox);
      expect(hidden.status).to.equal(404);
      expect(hidden.body.hint).to.match(/^GET \/api\/catalog lists the functions an unclaimed sandbox can see: the built-ins/);
    });

    it('checks a credential when one is sent: a wrong key is refused, not served as anonymous', async () => {
      const res = await client(svc.url).get<Record<string, any>>('/api/catalog', { 'x-api-key': 'pcs_live_not-a-real-key' });
      expect(res.status).to.equal(401);
      expect(res.body.code).to.equal('invalid_credentials');
    });
  });

  it('answers from memory: browsing and reading run no database query', async () => {
    await list('', { 'x-api-key': aliceKey }); // the key is verified once, then cached
    const pool = svc.container.resolve<Pool>(TOKENS.PgPool);
    const seen = await countQueries(svc, pool, async () => {
      for (let i = 0; i < 20; i++) {
        await list('?search=cost');
        await list('?tag=retail', { 'x-api-key': aliceKey });
        expect((await client(svc.url).get(`/api/catalog/${alicePublic.id}`)).status).to.equal(200);
      }
    });
    expect(seen).to.deep.equal([]);
  });
});
