import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import { DISCOVERY } from '../../../plugins/discovery';
import type { Changelog } from '../../../plugins/discovery';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { leaveMidway, rowsOnceSettled, whileLocked } from '../../support/abandoned-call';
import { client } from '../../support/http';
import { createKey, mintToken, registerSandbox, signUp } from '../../support/world';

const DAY = 86_400_000;
const lenient = { limits: { registrations: { perAddressPerDay: 1000, overallPerDay: 10_000 } } };

async function publish(svc: TestService, id: string, at: number, audience = ['agents']): Promise<void> {
  await svc.container.resolve<Changelog>(DISCOVERY.Changelog).publish({ id, date: new Date(at).toISOString(), title: `Entry ${id}`, summary: `About ${id}`, link: `/changelog#${id}`, audience });
}

const noticesOf = async (svc: TestService, path: string, headers: Record<string, string>, method: 'GET' | 'POST' = 'GET', body?: unknown) => {
  const res = method === 'GET' ? await client(svc.url).get<Record<string, any>>(path, headers) : await client(svc.url).post<Record<string, any>>(path, body, headers);
  expect(res.status, res.text).to.be.lessThan(300);
  return { ids: ((res.body.notices ?? []) as Array<{ id: string }>).map((n) => n.id), header: res.headers.get('x-service-notices'), body: res.body };
};

describe('response notices', function () {
  this.timeout(60_000);
  // The seed file's entries are dated up to 2026-11-22; the clock starts a year later so only entries published here are recent.
  const clock = new ManualClock(Date.parse('2027-12-01T12:00:00Z'));
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ clock, config: lenient });
  });
  after(() => svc.close());

  it('gives a key never shown any notice only the newest entry, when under two weeks old, then each entry once, newest first', async () => {
    await publish(svc, 'n-old', clock.now() - 20 * DAY);
    await publish(svc, 'n-mid', clock.now() - 5 * DAY);
    await publish(svc, 'n-new', clock.now() - 1 * DAY);
    const { key } = await registerSandbox(svc, 'noticed');
    const first = await noticesOf(svc, '/api/me', { 'x-api-key': key });
    expect(first.ids).to.deep.equal(['n-new']);
    expect(first.header).to.equal('1');
    const n = first.body.notices[0];
    expect(n).to.include.keys('id', 'date', 'title', 'summary', 'link');
    const second = await noticesOf(svc, '/api/me', { 'x-api-key': key });
    expect(second.ids).to.deep.equal([]);
    expect(second.header).to.equal('0');
    await publish(svc, 'n-a', clock.now() - 3 * 3600_000);
    await publish(svc, 'n-b', clock.now() - 2 * 3600_000);
    await publish(svc, 'n-c', clock.now() - 1 * 3600_000);
    await publish(svc, 'n-d', clock.now() - 0.5 * 3600_000);
    const third = await noticesOf(svc, '/api/functions', { 'x-api-key': key });
    expect(third.ids).to.deep.equal(['n-d', 'n-c', 'n-b']);
    const fourth = await noticesOf(svc, '/api/compute/price', { 'x-api-key': key }, 'POST', { context: { current_price: 3 } });
    expect(fourth.ids).to.deep.equal(['n-a']);
    const fifth = await noticesOf(svc, '/api/price-router', { 'x-api-key': key }, 'POST', { context: { current_price: 3 } });
    expect(fifth.ids).to.deep.equal([]);
  });

  it('a notice lookup that fails leaves a priced reply as it was: 200 with its receipt and no notices, never a 500 for a charged call', async () => {
    const own = await startTestService({ clock, config: lenient });
    try {
      await publish(own, 'n-broken', clock.now() - 3600_000);
      const { key } = await registerSandbox(own, 'notices-broken');
      // A real database fault on the notices' table only, after the call is recorded.
      await own.sequelize.query('ALTER TABLE notice_deliveries RENAME TO notice_deliveries_away');
      try {
        const res = await client(own.url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 3 } }, { 'x-api-key': key });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.price).to.be.a('string');
        expect(res.body).not.to.have.property('notices');
        expect(res.headers.get('x-service-notices')).to.equal(null);
        const [rows] = await own.sequelize.query(`SELECT status FROM usage_events WHERE id = '${String(res.body.receipt.usage_event_id)}'`);
        expect(rows).to.deep.equal([{ status: 'ok' }]);
      } finally {
        await own.sequelize.query('ALTER TABLE notice_deliveries_away RENAME TO notice_deliveries');
      }
      const after = await noticesOf(own, '/api/me', { 'x-api-key': key });
      expect(after.ids).to.deep.equal(['n-broken']);
    } finally {
      await own.close();
    }
  });

  for (const [name, path, body] of [
    ['compute', '/api/compute/price', { context: { current_price: 3 } }],
    ['router', '/api/price-router', { context: { current_price: 3 } }],
  ] as const) {
    it(`${name}: a caller that leaves while the notices are looked up is not charged: its recorded call is marked not_delivered and its sandbox call given back`, async () => {
      const own = await startTestService({ clock, config: lenient });
      try {
        await publish(own, 'n-slow', clock.now() - 3600_000);
        const { key } = await registerSandbox(own, `notices-slow-${name}`);
        const requestId = `notices-gone-${name}-${Date.now()}`;
        await whileLocked(own, 'notice_deliveries', 'ACCESS EXCLUSIVE', () =>
          leaveMidway(own.url, path, { headers: { 'x-api-key': key, 'x-request-id': requestId }, body, afterMs: 400 }),
        );
        const rows = await rowsOnceSettled<{ status: string }>(own, `SELECT status, error_code, billable FROM usage_events WHERE request_id = '${requestId}'`, (r) => r[0]?.status === 'error');
        expect(rows).to.deep.equal([{ status: 'error', error_code: 'not_delivered', billable: false }]);
        const next = await client(own.url, { 'x-api-key': key }).post<Record<string, any>>(path, body);
        expect(next.status, next.text).to.equal(200);
        expect(next.body.remaining.daily_compute_calls.remaining, 'only this call counted: the undelivered one was given back').to.equal(24);
      } finally {
        await own.close();
      }
    });
  }

  it('gives a new key nothing when the newest agent entry is two weeks old or more, and ignores entries for people only', async () => {
    const fresh = await startTestService({ clock: new ManualClock(Date.parse('2028-06-01T00:00:00Z')), config: lenient });
    try {
      await publish(fresh, 'p-people', Date.parse('2028-05-31T00:00:00Z'), ['people']);
      await publish(fresh, 'p-agents', Date.parse('2028-05-15T00:00:00Z'));
      const { key } = await registerSandbox(fresh, 'late');
      expect((await noticesOf(fresh, '/api/me', { 'x-api-key': key })).ids).to.deep.equal([]);
    } finally {
      await fresh.close();
    }
  });

  it('never shows entries older than 30 days', async () => {
    const fresh = await startTestService({ clock: new ManualClock(Date.parse('2029-01-31T00:00:00Z')), config: lenient });
    try {
      await publish(fresh, 'o-first', Date.parse('2029-01-30T00:00:00Z'));
      const { key } = await registerSandbox(fresh, 'aged');
      expect((await noticesOf(fresh, '/api/me', { 'x-api-key': key })).ids).to.deep.equal(['o-first']);
      await fresh.sequelize.query(`INSERT INTO changelog_entries (id, published_at, title, summary, link, audience) VALUES ('o-ancient', '2028-12-01T00:00:00Z', 't', 's', '/x', '{agents}')`);
      await fresh.container.resolve<Changelog>(DISCOVERY.Changelog).reload();
      expect((await noticesOf(fresh, '/api/me', { 'x-api-key': key })).ids).to.deep.equal([]);
    } finally {
      await fresh.close();
    }
  });

  it('gives tokens and person sessions no notices', async () => {
    await publish(svc, 'n-tokens', clock.now() - 60_000);
    const sandbox = await registerSandbox(svc, 'tokened');
    const token = await mintToken(svc, sandbox.key);
    const viaToken = await client(svc.url).get<Record<string, any>>('/api/me', { authorization: `Bearer ${token}` });
    expect(viaToken.body).not.to.have.property('notices');
    expect(viaToken.headers.get('x-service-notices')).to.equal(null);
    const person = await signUp(svc, 'viewer');
    const viaSession = await client(svc.url).get<Record<string, any>>('/api/me', { cookie: person.cookie });
    expect(viaSession.body).not.to.have.property('notices');
  });

  it('shows an entry to a key once across two instances sharing the database', async () => {
    const other = await startTestService({ clock, config: lenient, databaseUrl: svc.databaseUrl });
    try {
      const person = await signUp(svc, 'twice');
      const { key } = await createKey(svc, person, { name: 'k' });
      await publish(svc, 'n-shared', clock.now() - 1000);
      await other.container.resolve<Changelog>(DISCOVERY.Changelog).reload();
      const a = await noticesOf(svc, '/api/me', { 'x-api-key': key });
      const b = await noticesOf(other, '/api/me', { 'x-api-key': key });
      expect([...a.ids, ...b.ids].filter((id) => id === 'n-shared')).to.have.length(1);
    } finally {
      await other.close();
    }
  });

  // Last: it publishes the newest entry, which the tests above do not expect.
  it('spends no notice on a HEAD request and claims none in its headers; the next GET shows it', async () => {
    await publish(svc, 'n-head', clock.now() - 500);
    const { key } = await registerSandbox(svc, 'headed');
    const head = await client(svc.url).raw('HEAD', '/api/me', { headers: { 'x-api-key': key } });
    expect(head.status).to.equal(200);
    expect(head.text).to.equal('');
    expect(head.headers.get('x-service-notices')).to.equal(null);
    const after = await noticesOf(svc, '/api/me', { 'x-api-key': key });
    expect(after.ids).to.deep.equal(['n-head']);
    expect(after.header).to.equal('1');
  });
  it('compares keys against a signature of the recent agent entries that is the ids agentEntriesSince gives, the same string while they stay, and new when an entry comes into or falls out of the window', async () => {
    const changelog = svc.container.resolve<Changelog>(DISCOVERY.Changelog);
    const saved = clock.now();
    try {
      const since = () => clock.now() - 30 * DAY;
      const idsOf = () => changelog.agentEntriesSince(since()).map((e) => e.id).join('\n');
      await publish(svc, 'sig-people', clock.now() - 2 * 3600_000, ['people']);
      await publish(svc, 'sig-later', clock.now() + 3600_000);
      const before = changelog.agentSignatureSince(since());
      expect(before).to.equal(idsOf());
      expect(before.split('\n')).to.not.include.members(['sig-people', 'sig-later']);
      expect(changelog.agentSignatureSince(since())).to.equal(before);
      clock.advance(2 * 3600_000);
      const later = changelog.agentSignatureSince(since());
      expect(later.split('\n')[0]).to.equal('sig-later');
      expect(later).to.equal(idsOf());
      clock.advance(40 * DAY);
      expect(changelog.agentSignatureSince(since())).to.equal('');
      expect(idsOf()).to.equal('');
    } finally {
      clock.set(saved);
    }
  });
});
