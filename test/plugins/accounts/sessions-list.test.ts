import { expect } from 'chai';
import { client } from '../../support/http';
import { sessionCookieOf, signUp, uniqueEmail } from '../../support/identity';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';

type Body = Record<string, any>;

/** Every sign-in is a session, so a person's list can run to thousands: it is paged like every other list. */
describe('accounts: GET /api/user/sessions pages', function () {
  this.timeout(30_000);
  let svc: TestService;
  let cookie: string;
  const ids: string[] = [];

  before(async () => {
    svc = await startTestService();
    const email = uniqueEmail();
    const person = await signUp(svc.url, { email });
    ids.unshift(person.sessionId);
    const api = client(svc.url);
    for (let i = 0; i < 4; i++) {
      const res = await api.post<Body>('/api/auth/signin', { email, password: person.password });
      expect(res.status, res.text).to.equal(200);
      ids.unshift(res.body.session.id as string);
      cookie = sessionCookieOf(res);
    }
  });
  after(() => svc.close());

  it('answers newest first, limit at a time, with next_cursor until the last page; the session asking is marked current', async () => {
    const api = client(svc.url, { cookie });
    const seen: string[] = [];
    let cursor: string | null = null;
    const pages: number[] = [];
    do {
      const res: { status: number; body: Body; text: string } = await api.get<Body>(`/api/user/sessions?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.limit).to.equal(2);
      pages.push(res.body.data.length);
      seen.push(...(res.body.data as Body[]).map((s) => s.id as string));
      expect(res.body.has_more).to.equal(res.body.next_cursor !== null);
      cursor = res.body.next_cursor as string | null;
    } while (cursor);
    expect(pages).to.deep.equal([2, 2, 1]);
    expect(seen).to.deep.equal(ids);
    const first = await api.get<Body>('/api/user/sessions');
    expect(first.body.limit).to.equal(20);
    expect((first.body.data as Body[]).filter((s) => s.current).map((s) => s.id)).to.deep.equal([ids[0]]);
  });

  it('refuses a parameter it does not take, a bad limit and a cursor it did not issue (one naming no session id included) with 400, never a 500', async () => {
    const api = client(svc.url, { cookie });
    const forged = Buffer.from(JSON.stringify(['2026-11-28 01:00:00+00', 'not-a-uuid'])).toString('base64url');
    for (const q of ['foo=bar', 'limit=0', 'limit=101', 'cursor=nonsense', `cursor=${forged}`]) {
      const res = await api.get<Body>(`/api/user/sessions?${q}`);
      expect([res.status, res.body.code], q).to.deep.equal([400, 'validation_error']);
    }
  });
});
