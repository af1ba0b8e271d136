import { expect } from 'chai';
import { hintWithServedRoutes } from '../../core/http/middleware';
import { RouteTable } from '../../core/http/pipeline';
import { defineRoute, ok } from '../../core/http/route';
import { client } from '../support/http';
import { startTestService } from '../support/service';

describe('next steps of a refusal point only at routes this instance serves', function () {
  this.timeout(60_000);

  it('RouteTable.serves matches a step path with placeholders or concrete values against the route templates, the query ignored', () => {
    const table = new RouteTable();
    table.add('t', defineRoute({ id: 't.one', method: 'post', path: '/api/things/:id/claim', summary: 's', auth: 'public', handler: () => ok({}) }));
    table.add('t', defineRoute({ id: 't.two', method: 'get', path: '/api/things', summary: 's', auth: 'public', handler: () => ok({}) }));
    expect(table.serves('POST', '/api/things/{id}/claim')).to.equal(true);
    expect(table.serves('POST', '/api/things/<THING_ID>/claim')).to.equal(true);
    expect(table.serves('POST', '/api/things/th_123/claim')).to.equal(true);
    expect(table.serves('GET', '/api/things?limit=5')).to.equal(true);
    expect(table.serves('GET', '/api/things/th_123/claim')).to.equal(false);
    expect(table.serves('POST', '/api/things/a/b/claim')).to.equal(false);
    expect(table.serves('POST', '/api/auth/signin')).to.equal(false);
  });

  it('a 401 offers signing in only where people can sign in (the accounts plugin)', async () => {
    const withAccounts = await startTestService();
    const without = await startTestService({ enabled: ['health', 'identity', 'usage', 'pricing', 'discovery'] });
    try {
      const actions = async (url: string) => {
        const res = await client(url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 3 } });
        expect(res.status).to.equal(401);
        return (res.body.next as Array<{ action: string }>).map((s) => s.action);
      };
      expect(await actions(withAccounts.url)).to.include('sign_in');
      const bare = await actions(without.url);
      expect(bare).to.not.include('sign_in');
      expect(bare).to.include.members(['register_agent', 'try_demo']);
    } finally {
      await withAccounts.close();
      await without.close();
    }
  });
  it('a 422 insufficient_context offers the network\'s price observations as a way to a price only where they are taken (the verification plugin)', async () => {
    const withObservations = await startTestService();
    const without = await startTestService({ enabled: ['health', 'identity', 'usage', 'pricing', 'discovery'] });
    try {
      const refusal = async (url: string, path: string, headers: Record<string, string> = {}) => {
        const res = await client(url).post<Record<string, any>>(path, { context: { product_type: 'tea-nobody-observed', currency: 'USD' } }, headers);
        expect(res.status, res.text).to.equal(422);
        expect(res.body.code).to.equal('insufficient_context');
        return res.text;
      };
      const keyOf = async (url: string) => ((await client(url).post<Record<string, any>>('/api/agents/register', { name: 'observer' })).body.api_key as { key: string }).key;
      const served = await refusal(withObservations.url, '/api/compute/price', { 'x-api-key': await keyOf(withObservations.url) });
      expect(served).to.include('POST /api/data/observations');
      for (const text of [await refusal(without.url, '/api/compute/price', { 'x-api-key': await keyOf(without.url) }), await refusal(without.url, '/api/public/compute/demo')]) {
        expect(text).to.not.include('/api/data/observations');
        expect(text).to.not.include('price observations of');
        expect(text).to.include('competitive positioning needs competitor_prices');
      }
      expect((await client(without.url).post('/api/data/observations', {})).status).to.equal(404);
    } finally {
      await withObservations.close();
      await without.close();
    }
  });
  it('while self-registration is paused, a keyless demo call\'s receipt and its 429 at the end of the hourly budget offer no sandbox key', async () => {
    const paused = await startTestService({ config: { identity: { selfRegistrationOpen: false }, limits: { demo: { callsPerHour: 1 } } } });
    const open = await startTestService({ config: { limits: { demo: { callsPerHour: 1 } } } });
    try {
      const body = { context: { current_price: 3, currency: 'USD' } };
      const priced = await client(paused.url).post<Record<string, any>>('/api/public/compute/demo', body);
      expect(priced.status, priced.text).to.equal(200);
      expect(priced.body.receipt.hint).to.be.a('string').and.not.include('/api/agents/register');
      const spent = await client(paused.url).post<Record<string, any>>('/api/public/compute/demo', body);
      expect(spent.status).to.equal(429);
      expect(spent.body.hint).to.not.match(/sandbox/);
      expect(spent.body.next).to.deep.equal([]);
      expect((await client(paused.url).post('/api/agents/register', { name: 'late' })).status).to.equal(503);

      const openPriced = await client(open.url).post<Record<string, any>>('/api/public/compute/demo', body);
      expect(openPriced.body.receipt.hint).to.include('POST /api/agents/register');
      const openSpent = await client(open.url).post<Record<string, any>>('/api/public/compute/demo', body);
      expect(openSpent.status).to.equal(429);
      expect(openSpent.body.hint).to.include('free sandbox key');
      expect((openSpent.body.next as Array<{ action: string }>).map((s) => s.action)).to.deep.equal(['register_agent']);
    } finally {
      await paused.close();
      await open.close();
    }
  });
  it('a hint keeps its advice and loses the asides naming routes this instance does not serve', () => {
    // As RouteTable.serves: a path with a colon after its id is no route.
    const serves = (method: string, path: string) => !path.includes(':') && !(method.toUpperCase() === 'POST' && path.startsWith('/api/auth/'));
    expect(hintWithServedRoutes('Sign in (POST /api/auth/signin, or sign up at POST /api/auth/signup) and send the session cookie.', serves)).to.equal('Sign in and send the session cookie.');
    expect(hintWithServedRoutes('Rotate it (POST /api/api-keys/rotate) today.', serves)).to.equal('Rotate it (POST /api/api-keys/rotate) today.');
    expect(hintWithServedRoutes('Nothing to change (see the docs).', serves)).to.equal('Nothing to change (see the docs).');
    // A served route with a value and a colon after it stays.
    expect(hintWithServedRoutes('Loosen the policy (PATCH /api/routing-policies/pol_1: its ceilings).', serves)).to.equal('Loosen the policy (PATCH /api/routing-policies/pol_1: its ceilings).');
  });

  it('with the accounts plugin off, a claim link\'s 401 hints no longer send a person to sign in at a route that answers 404', async () => {
    const withAccounts = await startTestService();
    const without = await startTestService({ enabled: ['health', 'identity', 'usage', 'pricing', 'discovery'] });
    try {
      const hints = async (url: string) => {
        const reg = await client(url).post<Record<string, any>>('/api/agents/register', { name: 'claimable' });
        const claimPath = new URL(reg.body.claim.url as string).pathname;
        const none = await client(url).post<Record<string, any>>(claimPath, {});
        const key = await client(url).post<Record<string, any>>(claimPath, {}, { 'x-api-key': reg.body.api_key.key as string });
        expect(none.status).to.equal(401);
        expect(key.status).to.equal(401);
        return [none.body.hint as string, key.body.hint as string];
      };
      for (const hint of await hints(withAccounts.url)) expect(hint).to.include('POST /api/auth/signin');
      for (const hint of await hints(without.url)) {
        expect(hint).to.not.include('/api/auth/');
        expect(hint).to.match(/^Sign in and /);
      }
      expect((await client(without.url).post('/api/auth/signin', {})).status).to.equal(404);
    } finally {
      await withAccounts.close();
      await without.close();
    }
  });
  it('with the accounts plugin off, nobody can claim a sandbox: its refusals keep the claim step marked unavailable and registration and the discovery documents say so', async () => {
    const config = { limits: { sandbox: { computeCallsPerDay: 1 } } };
    const withAccounts = await startTestService({ config });
    const without = await startTestService({ config, enabled: ['health', 'identity', 'usage', 'pricing', 'discovery', 'catalog'] });
    try {
      const claimStepOf = (body: Record<string, any>) => (body.next as Array<Record<string, unknown>>).find((s) => s.action === 'claim');
      const walk = async (url: string) => {
        const reg = await client(url).post<Record<string, any>>('/api/agents/register', { name: 'unclaimable' });
        expect(reg.status, reg.text).to.equal(201);
        const api = client(url, { 'x-api-key': reg.body.api_key.key as string });
        expect((await api.post('/api/compute/price', { context: { current_price: 3 } })).status).to.equal(200);
        const quota = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 3 } });
        expect(quota.status, quota.text).to.equal(429);
        const plan = await api.post<Record<string, any>>('/api/compute/batch', { items: [] });
        expect(plan.status, plan.text).to.equal(403);
        expect(plan.body.code).to.equal('plan_restricted');
        return { how: reg.body.claim.how as string, quota: claimStepOf(quota.body), quotaHint: quota.body.hint as string, plan: plan.body, llms: (await client(url).get('/llms.txt')).text, agents: (await client(url).get<Record<string, any>>('/.well-known/agents.json')).body };
      };
      const on = await walk(withAccounts.url);
      expect(on.quota).to.include({ available: true, path: '/api/agents/claim' });
      expect(on.quotaHint).to.include('To continue now: claim (see next;');
      expect(claimStepOf(on.plan)).to.include({ available: true });
      expect(on.plan.hint).to.include('Have a person claim the workspace');
      expect(on.how).to.include('signed in, they open it and confirm');
      expect(on.llms).to.include('POST ' + withAccounts.url + '/api/agents/claim-link');

      const off = await walk(without.url);
      expect(off.quota).to.include({ available: false, path: '/api/agents/claim' });
      expect(off.quota?.description).to.match(/^Not offered by this service/);
      expect(off.quotaHint).to.match(/^The daily quota resets at 00:00 UTC \(in \d+ s\)\. Nothing this service offers lets it continue sooner/).and.not.include('To continue now');
      expect(claimStepOf(off.plan)).to.include({ available: false });
      expect(off.plan.hint).to.include('cannot be lifted here').and.not.include('Have a person claim');
      expect(off.how).to.match(/^Nobody can confirm it on this service/);
      expect(off.llms).to.include('no person can claim a sandbox here').and.not.include('/api/agents/claim-link');
      const selfRegistration = (off.agents.ways_in as Array<Record<string, string>>).find((w) => w.id === 'self_registration');
      expect(selfRegistration?.how).to.include('nobody claims it here');
      expect((await client(without.url).post('/api/auth/signin', {})).status).to.equal(404);
    } finally {
      await withAccounts.close();
      await without.close();
    }
  });
});
