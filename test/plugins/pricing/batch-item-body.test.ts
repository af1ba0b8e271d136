import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import * as s from '../../../plugins/pricing/schemas';
import { createKey, signUp } from '../../support/world';

const UNSTORABLE = 'must not contain NUL (\\u0000) or an unpaired UTF-16 surrogate (\\ud800-\\udfff alone): text that cannot be stored';

/** `{"context":{"current_price":5,"deep":[[…1…]]}}` nesting exactly `depth` levels of objects and arrays. */
const callNesting = (depth: number): string => `{"context":{"current_price":5,"deep":${'['.repeat(depth - 2)}1${']'.repeat(depth - 2)}}}`;

describe('batch: an item\'s body is refused in its place, as a single call\'s would be', function () {
  this.timeout(30_000);
  let svc: TestService;
  let api: ReturnType<typeof client>;
  before(async () => {
    svc = await startTestService();
    api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'batch-item-body'), { name: 'b' })).key });
  });
  after(() => svc.close());

  const post = (path: string, rawBody: string) => api.raw('POST', path, { rawBody, headers: { 'content-type': 'application/json' } });

  it('text that cannot be stored (NUL, an unpaired surrogate) in one item is that item\'s 400, with the item without it as example; the others are priced', async () => {
    const res = await post(
      '/api/compute/batch',
      '{"items":[{"context":{"current_price":5,"note":"a\\u0000b"}},{"context":{"current_price":6}},{"context":{"current_price":7,"lab\\ud800el":1}}]}',
    );
    expect(res.status, res.text).to.equal(200);
    const [first, second, third] = res.body.items as Array<Record<string, any>>;
    expect(first).to.deep.include({ index: 0, status: 400 });
    expect(first?.error).to.deep.include({ code: 'validation_error', issues: [{ path: 'items[0].context.note', reason: UNSTORABLE }], example: { context: { current_price: 5 } } });
    expect(first?.error.hint).to.match(/NUL character or the half of a surrogate pair/);
    expect(second).to.deep.include({ index: 1, status: 200 });
    expect(second?.result.price).to.be.a('string');
    expect(third).to.deep.include({ index: 2, status: 400 });
    expect(third?.error.issues).to.deep.equal([{ path: 'items[2].context.lab\ud800el', reason: UNSTORABLE }]);
    expect(res.body.summary).to.deep.include({ succeeded: 1, failed: 2 });
  });

  it('a single call refusing such text offers what was sent without it as its example', async () => {
    const res = await post('/api/compute/price', '{"context":{"current_price":5,"note":"a\\u0000b"},"function_id":"fn_builtin_charm"}');
    expect(res.status, res.text).to.equal(400);
    expect(res.body.issues).to.deep.equal([{ path: 'context.note', reason: UNSTORABLE }]);
    expect(res.body.example).to.deep.equal({ context: { current_price: 5 }, function_id: 'fn_builtin_charm' });
    expect((await api.post('/api/compute/price', res.body.example)).status).to.equal(200);
  });

  it('a pin refused for text that cannot be stored gets the route\'s own example, never the caller\'s context unpinned (batch item, router, single call)', async () => {
    const batch = await post('/api/compute/batch', '{"items":[{"context":{"unit_cost":7},"function_id":"fn_\\u0000x"},{"context":{"current_price":6}}]}');
    expect(batch.status, batch.text).to.equal(200);
    const [item] = batch.body.items as Array<Record<string, any>>;
    expect(item?.error.issues).to.deep.equal([{ path: 'items[0].function_id', reason: UNSTORABLE }]);
    expect(item?.error.example).to.deep.equal(s.batchExample.items[0]);
    const routed = await post('/api/price-router', '{"context":{"unit_cost":7},"function_name":"x\\ud800"}');
    expect(routed.status, routed.text).to.equal(400);
    expect(routed.body.issues).to.deep.equal([{ path: 'function_name', reason: UNSTORABLE }]);
    expect(routed.body.example).to.deep.equal(s.routerExample);
    // Beside a function_id, a function_name is left out as ever: the function_id stays the pin.
    const both = await post('/api/price-router', '{"context":{"unit_cost":7},"function_id":"fn_builtin_cost_plus","function_name":"x\\ud800"}');
    expect(both.body.example).to.deep.equal({ context: { unit_cost: 7 }, function_id: 'fn_builtin_cost_plus' });
    const single = await post('/api/compute/price', '{"context":{"unit_cost":7},"function_id":"fn_\\ud800x"}');
    expect(single.status, single.text).to.equal(400);
    expect(single.body.example).to.deep.equal(s.computeExample);
  });

  it('an item may nest as deep as a single call\'s body (BODY_MAX_DEPTH counts from the item); one deeper refuses the batch, saying so', async () => {
    expect((await post('/api/compute/price', callNesting(64))).status).to.equal(200);
    expect((await post('/api/compute/price', callNesting(65))).body.code).to.equal('invalid_json');
    const fits = await post('/api/compute/batch', `{"items":[${callNesting(64)},{"context":{"current_price":6}}]}`);
    expect(fits.status, fits.text).to.equal(200);
    expect((fits.body.items as Array<{ status: number }>).map((i) => i.status)).to.deep.equal([200, 200]);
    const deeper = await post('/api/compute/batch', `{"items":[${callNesting(65)}]}`);
    expect(deeper.status).to.equal(400);
    expect(deeper.body).to.deep.include({ code: 'invalid_json', error: 'Request body nests arrays and objects deeper than 64 levels in an item (BODY_MAX_DEPTH).' });
  });
});
