import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';

/** The ids of the entries a changelog page shows. */
const articleIds = (html: string): string[] => [...html.matchAll(/<article id="([^"]+)">/g)].map((m) => m[1] ?? '');

describe('the changelog page', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ enabled: ['identity', 'discovery'] });
  });
  after(() => svc.close());

  it('filters by ?audience= as the feeds do, and names the filtered feeds as its alternates', async () => {
    const api = client(svc.url);
    const all = await api.get('/changelog');
    expect(all.status).to.equal(200);
    const allIds = articleIds(all.text);
    for (const audience of ['agents', 'people']) {
      const page = await api.get(`/changelog?audience=${audience}`);
      expect(page.status, audience).to.equal(200);
      expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      const feed = await api.get<{ items: Array<{ id: string }> }>(`/api/changelog/feed.json?audience=${audience}`);
      const ids = articleIds(page.text);
      expect(ids, audience).to.deep.equal(feed.body.items.map((i) => i.id));
      expect(ids.length, audience).to.be.greaterThan(0).and.below(allIds.length);
      expect(page.text).to.include(`href="${svc.url}/api/changelog/feed.json?audience=${audience}"`);
      expect(page.text).to.include(`href="${svc.url}/api/changelog/rss.xml?audience=${audience}"`);
    }
  });

  it('refuses an unknown audience or parameter with 400 validation_error, as the feeds and the list do', async () => {
    const api = client(svc.url);
    for (const path of ['/changelog', '/api/changelog', '/api/changelog/feed.json', '/api/changelog/rss.xml']) {
      const bad = await api.get<Record<string, any>>(`${path}?audience=bots`);
      expect(bad.status, path).to.equal(400);
      expect(bad.body.code, path).to.equal('validation_error');
      expect(bad.body.issues.map((i: { path: string }) => i.path), path).to.deep.equal(['audience']);
      const unknown = await api.get<Record<string, any>>(`${path}?audiance=agents`);
      expect(unknown.status, path).to.equal(400);
      expect(unknown.body.issues[0]).to.include({ path: 'audiance' });
      expect(unknown.body.issues[0].reason, path).to.include('did you mean "audience"');
    }
  });
});
