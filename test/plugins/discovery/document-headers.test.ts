import { expect } from 'chai';
import { DISCOVERY } from '../../../plugins/discovery';
import type { Changelog } from '../../../plugins/discovery';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { call } from '../../support/http';

/** The text documents, written by their handlers rather than as JSON replies. */
const TEXT_DOCUMENTS = [
  '/llms.txt',
  '/.well-known/llms.txt',
  '/api/openapi.json',
  '/api/openapi.json?format=json',
  '/api/changelog/feed.json',
  '/api/changelog/feed.json?audience=agents',
  '/api/changelog/rss.xml',
  '/changelog',
];

/** Every discovery document, text and JSON: each carries a strong ETag. */
const DOCUMENTS = [
  ...TEXT_DOCUMENTS,
  '/',
  '/.well-known/agents.json',
  '/.well-known/mcp.json',
  '/api/changelog',
  '/api/changelog?audience=people',
  '/changelog?audience=agents',
  // The identity plugin's OAuth metadata, which OAuth clients and the MCP SDK poll like the others.
  '/.well-known/oauth-authorization-server',
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-protected-resource/api/mcp/rpc',
];

describe('discovery documents: headers', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService();
  });
  after(() => svc.close());

  it('HEAD on a text document carries the Content-Length and Content-Type its GET sends, without a body', async () => {
    for (const path of TEXT_DOCUMENTS) {
      const get = await call(svc.url, 'GET', path);
      const head = await call(svc.url, 'HEAD', path);
      expect(get.status, path).to.equal(200);
      expect(head.status, path).to.equal(200);
      expect(head.text, path).to.equal('');
      expect(get.headers.get('content-length'), path).to.equal(String(Buffer.byteLength(get.text)));
      expect(head.headers.get('content-length'), path).to.equal(get.headers.get('content-length'));
      expect(head.headers.get('content-type'), path).to.equal(get.headers.get('content-type'));
    }
    // The metrics change between two scrapes: HEAD states a length of its own.
    const metrics = await call(svc.url, 'HEAD', '/metrics');
    expect(metrics.status).to.equal(200);
    expect(metrics.headers.get('content-type')).to.match(/^text\/plain/);
    expect(Number(metrics.headers.get('content-length'))).to.be.greaterThan(1000);
  });

  it('sends a strong ETag of its body on each discovery document, and answers If-None-Match naming it with 304 without a body', async () => {
    const etags = new Map<string, string>();
    for (const path of DOCUMENTS) {
      const first = await call(svc.url, 'GET', path);
      expect(first.status, path).to.equal(200);
      const etag = first.headers.get('etag') ?? '';
      expect(etag, path).to.match(/^"[A-Za-z0-9_-]{32}"$/);
      etags.set(path, etag);
      const again = await call(svc.url, 'GET', path);
      expect([again.headers.get('etag'), again.text], path).to.deep.equal([etag, first.text]);
      // fetch() (undici here) sends Cache-Control: no-cache beside every If-None-Match it is given: the 304 comes all the same.
      for (const [method, inm] of [['GET', etag], ['HEAD', etag], ['GET', `"elsewhere", W/${etag}`], ['GET', '*']]) {
        const notModified = await call(svc.url, method ?? 'GET', path, { headers: { 'if-none-match': inm ?? '' } });
        expect(notModified.status, `${method} ${path} If-None-Match: ${inm}`).to.equal(304);
        expect(notModified.text, path).to.equal('');
        expect(notModified.headers.get('etag'), path).to.equal(etag);
        expect(notModified.headers.get('cache-control'), path).to.equal(first.headers.get('cache-control'));
        expect(notModified.headers.get('content-length'), path).to.equal(null);
      }
      // Another ETag gets the whole document.
      for (const inm of ['"elsewhere"', 'W/"elsewhere"', etag.slice(1, -1)]) {
        const full = await call(svc.url, 'GET', path, { headers: { 'if-none-match': inm } });
        expect([full.status, full.text], `${path} If-None-Match: ${inm}`).to.deep.equal([200, first.text]);
      }
    }
    // Each representation has its own: the YAML and JSON OpenAPI, a filtered feed and the whole one.
    expect(etags.get('/api/openapi.json')).to.not.equal(etags.get('/api/openapi.json?format=json'));
    expect(etags.get('/api/changelog/feed.json')).to.not.equal(etags.get('/api/changelog/feed.json?audience=agents'));
    // The metrics change at every scrape: no validator.
    expect((await call(svc.url, 'GET', '/metrics')).headers.get('etag')).to.equal(null);
  });

  it("changes a changelog document's ETag when an entry is published, so a reader's If-None-Match then gets the new body", async () => {
    const paths = ['/api/changelog/feed.json', '/api/changelog/rss.xml', '/api/changelog', '/changelog'];
    const before = new Map<string, string>();
    for (const path of paths) before.set(path, (await call(svc.url, 'GET', path)).headers.get('etag') ?? '');
    await svc.container.resolve<Changelog>(DISCOVERY.Changelog).publish({ id: 'etag-test', date: new Date().toISOString(), title: 'ETag test', summary: 'An entry', link: '/changelog#etag-test', audience: ['agents'] });
    for (const path of paths) {
      const res = await call(svc.url, 'GET', path, { headers: { 'if-none-match': before.get(path) ?? '' } });
      expect(res.status, path).to.equal(200);
      expect(res.text, path).to.include('etag-test');
      expect(res.headers.get('etag'), path).to.match(/^"[A-Za-z0-9_-]{32}"$/).and.not.equal(before.get(path));
    }
  });

  it('caches the changelog list and page publicly for five minutes, as the feeds', async () => {
    for (const path of ['/api/changelog', '/changelog', '/api/changelog/feed.json', '/api/changelog/rss.xml']) {
      const res = await call(svc.url, 'GET', path);
      expect(res.status, path).to.equal(200);
      expect(res.headers.get('cache-control'), path).to.equal('public, max-age=300');
    }
  });
});
