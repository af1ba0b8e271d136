import { expect } from 'chai';
import { once } from 'node:events';
import { connect } from 'node:net';
import { Duplex } from 'node:stream';
import { clientErrorHandler } from '../../core/http/client-error';
import { ID_PATTERN } from '../../core/ids';
import { probePlugin } from '../support/probe-plugin';
import { startTestService } from '../support/service';
import type { TestService } from '../support/service';
import { client } from '../support/http';


/** Sends raw bytes on a new connection and reads everything the server answers until it closes. */
function rawExchange(port: number, head: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    let text = '';
    const socket = connect(port, '127.0.0.1', () => socket.end(head));
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}
describe('kernel HTTP pipeline', () => {
  let svc: TestService;
  let api: ReturnType<typeof client>;

  before(async () => {
    svc = await startTestService({ extraPlugins: [probePlugin()], enabled: ['health', 'probe'] });
    api = client(svc.url);
  });
  after(() => svc.close());

  it('answers a body that is not JSON with 400 invalid_json, a hint and the route example', async () => {
    const res = await api.raw('POST', '/probe/items', { rawBody: '{"label": "widget",', headers: { 'content-type': 'application/json' } });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('invalid_json');
    expect(res.body.error).to.be.a('string').and.match(/not valid JSON/);
    expect(res.body.hint).to.be.a('string').and.match(/JSON/);
    expect(res.body.example).to.deep.equal({ label: 'widget', quantity: 2 });
    expect(res.body.request_id).to.equal(res.headers.get('x-request-id'));
  });

  for (const encoding of ['gzip', 'deflate', 'br']) {
    it(`answers a body its Content-Encoding (${encoding}) cannot decode with 400 invalid_json and the route example, not a 500`, async () => {
      const res = await api.raw('POST', '/probe/items', { rawBody: 'not compressed at all', headers: { 'content-type': 'application/json', 'content-encoding': encoding } });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('invalid_json');
      expect(res.body.error).to.match(new RegExp(`could not be decoded as Content-Encoding ${encoding}`));
      expect(res.body.example).to.deep.equal({ label: 'widget', quantity: 2 });
    });
  }

  it('answers a Content-Encoding it does not read (neither gzip, deflate, br nor identity) with 415 unsupported_media_type', async () => {
    const res = await api.raw('POST', '/probe/items', { rawBody: '{"label":"widget","quantity":2}', headers: { 'content-type': 'application/json', 'content-encoding': 'br2' } });
    expect(res.status, res.text).to.equal(415);
    expect(res.body.code).to.equal('unsupported_media_type');
  });

  it('names, in the 415 of a Content-Encoding it does not read, the one sent and the ones it reads', async () => {
    const res = await api.raw('POST', '/probe/items', { rawBody: '{"label":"widget","quantity":2}', headers: { 'content-type': 'application/json', 'content-encoding': 'br2' } });
    expect(res.status, res.text).to.equal(415);
    expect(res.body.error).to.equal('Request body encoding "br2" is not supported.');
    expect(res.body.hint).to.match(/^Send UTF-8 JSON uncompressed, or compressed whole with Content-Encoding gzip, deflate, br(, zstd)? \(identity is uncompressed\)\.$/);
  });

  it('treats a non-JSON body sent as text/plain as invalid_json too', async () => {
    const res = await api.raw('POST', '/probe/items', { rawBody: 'label=widget', headers: { 'content-type': 'text/plain' } });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('invalid_json');
  });

  it('answers a body nested deeper than BODY_MAX_DEPTH with 400 invalid_json naming the limit; one within it is read', async () => {
    const nested = (n: number) => `{"label":"widget","quantity":2,"deep":${'['.repeat(n)}${']'.repeat(n)}}`;
    for (const depth of [64, 10_000]) {
      const res = await api.raw('POST', '/probe/items', { rawBody: nested(depth), headers: { 'content-type': 'application/json' } });
      expect(res.status, `${depth}: ${res.text}`).to.equal(400);
      expect(res.body.code).to.equal('invalid_json');
      expect(res.body.error).to.match(/deeper than 64 levels \(BODY_MAX_DEPTH\)/);
      expect(res.body.example).to.deep.equal({ label: 'widget', quantity: 2 });
    }
    // Brackets inside strings are text, not nesting.
    const within = await api.raw('POST', '/probe/items', { rawBody: JSON.stringify({ label: 'widget', note: `"\\${'[{'.repeat(200)}` }), headers: { 'content-type': 'application/json' } });
    expect(within.body.code, within.text).to.equal('validation_error');
    const shallow = await api.raw('POST', '/probe/items', { rawBody: nested(62), headers: { 'content-type': 'application/json' } });
    expect(shallow.body.code, shallow.text).to.equal('validation_error');
  });

  it('refuses text that cannot be stored (NUL, an unpaired surrogate) with 400 naming where it is, once the route\'s own validation passes; whole pairs pass', async () => {
    for (const [rawBody, path] of [
      ['{"label":"wid\\u0000get"}', 'label'],
      ['{"label":"lone \\udc00 low"}', 'label'],
      ['{"label":"high \\ud800","quantity":2}', 'label'],
    ] as const) {
      const res = await api.raw('POST', '/probe/items', { rawBody, headers: { 'content-type': 'application/json' } });
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues).to.deep.equal([{ path, reason: 'must not contain NUL (\\u0000) or an unpaired UTF-16 surrogate (\\ud800-\\udfff alone): text that cannot be stored' }]);
      expect(res.body.hint).to.match(/NUL character or the half of a surrogate pair/);
    }
    // The route's own issues come first: a body it refuses anyway is told what the route says.
    const both = await api.raw('POST', '/probe/items', { rawBody: '{"label":"x\\u0000","colour":1}', headers: { 'content-type': 'application/json' } });
    expect(both.body.issues).to.deep.equal([{ path: 'colour', reason: 'unknown field "colour" not accepted' }]);
    // An escaped pair is one character (an emoji), and goes on to the route's own validation.
    const pair = await api.raw('POST', '/probe/items', { rawBody: '{"label":"\\ud83d\\ude00"}', headers: { 'content-type': 'application/json' } });
    expect(pair.status, pair.text).to.equal(200);
    expect(pair.body.created).to.deep.equal({ label: '\u{1F600}' });
  });

  it('answers a request Node\'s parser refuses (a control character in a header, headers too large) in the error shape, not a bare status line, and counts it', async () => {
    const { port } = new URL(svc.url);
    const refusedCount = async (code: string) => {
      const line = (await client(svc.url).get('/metrics')).text.split('\n').find((l) => l.startsWith(`http_requests_refused_by_parser_total{code="${code}"}`));
      // The series exists from the start, at 0.
      expect(line, code).to.be.a('string');
      return Number(line?.split(' ').pop());
    };
    const before = { bad_request: await refusedCount('bad_request'), headers_too_large: await refusedCount('headers_too_large') };
    for (const [head, status, code] of [
      [`GET /healthz HTTP/1.1\r\nHost: x\r\nUser-Agent: a\x01b\r\n\r\n`, 400, 'bad_request'],
      [`GET /healthz HTTP/1.1\r\nHost: x\r\nUser-Agent: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ] as const) {
      const answer = await rawExchange(Number(port), head);
      const [statusLine = '', ...rest] = answer.split('\r\n');
      expect(statusLine, answer.slice(0, 200)).to.match(new RegExp(`^HTTP/1.1 ${status} `));
      expect(answer).to.match(/\r\ncontent-type: application\/json; charset=utf-8\r\n/i);
      const body = JSON.parse(rest.slice(rest.indexOf('') + 1).join('\r\n')) as Record<string, unknown>;
      expect(body).to.include({ code });
      expect(body.error).to.be.a('string').and.equal(body.message);
      expect(body.hint).to.be.a('string');
    }
    // Never seen by a route (so not in http_request_duration_seconds), each is counted by the code it was answered.
    expect({ bad_request: await refusedCount('bad_request'), headers_too_large: await refusedCount('headers_too_large') }).to.deep.equal({ bad_request: before.bad_request + 1, headers_too_large: before.headers_too_large + 1 });
  });

  /** An HTTP answer as raw text: its status, headers (lower-case names) and JSON body. */
  const parseAnswer = (answer: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> } => {
    const [head = '', ...body] = answer.split('\r\n\r\n');
    const [statusLine = '', ...lines] = head.split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body.join('\r\n\r\n')) as Record<string, unknown> };
  };

  it('gives a request the parser refuses (400 malformed header, 431 headers too large, 408 too slow) a request id, in request_id and X-Request-Id, a new one each', async () => {
    const { port } = new URL(svc.url);
    const ids: string[] = [];
    for (const [head, status, code] of [
      [`GET /api/me HTTP/1.1\r\nHost: x\r\nX-Request-Id: req_mine\r\nUser-Agent: a\x01b\r\n\r\n`, 400, 'bad_request'],
      [`GET /api/me HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ] as const) {
      const answer = await rawExchange(Number(port), head);
      const res = parseAnswer(answer);
      expect(res.status).to.equal(status);
      expect(res.body).to.include({ code });
      expect(res.body.request_id, answer.slice(0, 300)).to.be.a('string').and.match(ID_PATTERN).and.match(/^req_/);
      expect(res.headers['x-request-id']).to.equal(res.body.request_id);
      ids.push(res.body.request_id as string);
    }
    // A request that never finished arriving (Node's request timeout, minutes in service): the same handler, driven directly.
    const written: Buffer[] = [];
    const socket = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, done) {
        written.push(Buffer.from(chunk));
        done();
      },
    });
    clientErrorHandler(16_384)(Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
    await once(socket, 'finish');
    const slow = parseAnswer(Buffer.concat(written).toString('utf8'));
    expect(slow.status).to.equal(408);
    expect(slow.body).to.include({ code: 'request_timeout' });
    expect(slow.body.request_id).to.be.a('string').and.match(/^req_/);
    expect(slow.headers['x-request-id']).to.equal(slow.body.request_id);
    expect(slow.headers['content-length']).to.equal(String(Buffer.byteLength(JSON.stringify(slow.body))));
    ids.push(slow.body.request_id as string);
    expect(new Set(ids).size).to.equal(3);
  });

  it('answers a body declared in a charset other than UTF-8 with 415 unsupported_media_type; utf-8 in any spelling is read', async () => {
    for (const charset of ['iso-8859-1', 'utf-16le', '"windows-1252"']) {
      const res = await api.raw('POST', '/probe/items', { rawBody: '{"label":"caf\u00e9","quantity":2}', headers: { 'content-type': `application/json; charset=${charset}` } });
      expect(res.status, `${charset}: ${res.text}`).to.equal(415);
      expect(res.body.code).to.equal('unsupported_media_type');
      expect(res.body.hint).to.match(/UTF-8/);
    }
    for (const charset of ['utf-8', 'UTF-8', 'utf8', '"utf-8"']) {
      const res = await api.raw('POST', '/probe/items', { rawBody: JSON.stringify({ label: 'café', quantity: 2 }), headers: { 'content-type': `application/json; charset=${charset}` } });
      expect(res.status, `${charset}: ${res.text}`).to.equal(200);
    }
  });

  it('answers a body failing validation with issues (path and reason), a hint and a passing example', async () => {
    const res = await api.post('/probe/items', { label: '', quantity: -1, extra: true });
    expect(res.status).to.equal(400);
    expect(res.body.code).to.equal('validation_error');
    const issues = res.body.issues as Array<{ path: string; reason: string }>;
    expect(issues.map((i) => i.path)).to.include.members(['label', 'quantity']);
    expect(issues.every((i) => typeof i.reason === 'string' && i.reason.length > 0)).to.equal(true);
    expect(issues.some((i) => /extra/.test(i.reason))).to.equal(true, 'unknown fields are refused');
    expect(res.body.hint).to.be.a('string');
    expect(res.body.example).to.deep.equal({ label: 'widget', quantity: 2 });
    const ok = await api.post('/probe/items', res.body.example);
    expect(ok.status).to.equal(200);
  });

  it('validates params and query with the same issue shape', async () => {
    const bad = await api.get('/probe/items/NOT-OK?verbose=maybe');
    expect(bad.status).to.equal(400);
    expect((bad.body.issues as Array<{ path: string }>)[0]?.path).to.equal('id');
    const good = await api.get('/probe/items/abc123?verbose=true');
    expect(good.status).to.equal(200);
    expect(good.body).to.deep.equal({ id: 'abc123', verbose: true });
  });

  it('answers a malformed percent-escape in a path parameter with 400 validation_error naming the parameter, not a 500', async () => {
    for (const [method, path, param] of [
      ['GET', '/probe/items/%E0%A4%A', 'id'],
      ['HEAD', '/probe/items/%E0', 'id'],
      ['DELETE', '/probe/items/%E0%A4%A', 'id'],
      ['GET', '/probe/fail/%', 'kind'],
    ] as const) {
      const res = await api.raw(method, path);
      expect(res.status, `${method} ${path}: ${res.text}`).to.equal(400);
      expect(res.headers.get('x-request-id')).to.match(/^req_/);
      if (method === 'HEAD') continue;
      expect(res.headers.get('content-type')).to.match(/application\/json/);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.error).to.be.a('string');
      expect(res.body.hint).to.be.a('string').and.match(/encodeURIComponent/);
      expect(res.body.issues).to.deep.equal([{ path: param, reason: 'not a valid percent-encoded UTF-8 string' }]);
      expect(res.body.request_id).to.equal(res.headers.get('x-request-id'));
    }
  });

  it('answers unknown routes with a JSON 404', async () => {
    const res = await api.get('/no/such/route');
    expect(res.status).to.equal(404);
    expect(res.headers.get('content-type')).to.match(/application\/json/);
    expect(res.body.code).to.equal('not_found');
    expect(res.body.error).to.be.a('string');
    expect(res.body.hint).to.be.a('string');
  });

  it('answers a wrong method with 405, an Allow header and a hint', async () => {
    const res = await api.delete('/probe/items');
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('POST');
    expect(res.body.code).to.equal('method_not_allowed');
    expect(res.body.hint).to.match(/POST/);
  });

  it('names in a 405 the path as sent (not the route template) and lists the methods as a reader would', async () => {
    const res = await api.raw<Record<string, any>>('PUT', '/probe/items/it_42');
    expect(res.status).to.equal(405);
    expect(res.body.error).to.equal('PUT is not supported on /probe/items/it_42.');
    expect(res.body.hint).to.equal('Use GET on this path.');
  });

  it('writes domain errors in the common shape with every recovery field and header', async () => {
    const res = await api.get('/probe/fail/api');
    expect(res.status).to.equal(429);
    expect(res.body).to.include({ error: 'Slow down.', code: 'rate_limited', hint: 'wait', retry_after: 7 });
    expect(res.body.limit).to.deep.equal({ per_minute: 10 });
    expect(res.body.next).to.deep.equal([{ action: 'retry', method: 'GET', path: '/probe/fail/api' }]);
    expect(res.headers.get('retry-after')).to.equal('7');
  });

  it('hides unexpected errors behind a generic 500 without a stack trace', async () => {
    const res = await api.get('/probe/fail/boom');
    expect(res.status).to.equal(500);
    expect(res.body.code).to.equal('internal_error');
    expect(res.text).not.to.contain('secret internal detail');
    expect(res.text).not.to.match(/at .*\.js:\d+/);
  });

  it('puts a request id on every response and echoes a well-formed incoming one', async () => {
    for (const path of ['/healthz', '/no/such', '/probe/fail/api']) {
      const res = await api.get(path);
      expect(res.headers.get('x-request-id')).to.match(/^req_/);
    }
    const echoed = await api.get('/healthz', { 'x-request-id': 'trace-1234567890' });
    expect(echoed.headers.get('x-request-id')).to.equal('trace-1234567890');
    const refused = await api.get('/healthz', { 'x-request-id': 'bad id with spaces' });
    expect(refused.headers.get('x-request-id')).to.match(/^req_/);
  });

  it('refuses a body over the configured limit with 413 naming the limit in bytes', async () => {
    const res = await api.raw('POST', '/probe/items', { rawBody: JSON.stringify({ label: 'x'.repeat(2_000_000) }), headers: { 'content-type': 'application/json' } });
    expect(res.status).to.equal(413);
    expect(res.body.code).to.equal('payload_too_large');
    expect(res.body.error).to.equal('Request body is too large: 2000012 bytes, over the limit of 1048576 bytes.');
    expect(res.body.limit).to.deep.equal({ body_bytes: 1_048_576 });
    expect(res.body.hint).to.match(/^Send at most 1048576 bytes/);
  });

  it('needs credentials on routes that do not declare themselves public', async () => {
    const res = await api.get('/probe/private');
    expect(res.status).to.equal(401);
    expect(res.body.code).to.equal('unauthorized');
    expect(res.headers.get('www-authenticate')).to.match(/^Bearer/);
  });
});
