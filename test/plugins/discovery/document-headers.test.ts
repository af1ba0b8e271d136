import { expect } from 'chai';
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
});
