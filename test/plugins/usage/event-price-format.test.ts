import { expect } from 'chai';
import { client } from '../../support/http';
import { sendJson, startUpstream } from '../../support/outbound';
import type { Upstream } from '../../support/outbound';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { createKey, signUp } from '../../support/world';
import { price, unique, usageConfig } from './helpers';

/**
 * An event's price reads as the compute response wrote it: in its currency's minor units (JPY has
 * none, KWD three), not with two decimals forced; its cost (USDC) keeps its own format.
 */
describe('usage: an event\'s price in its currency\'s minor units', function () {
  this.timeout(60_000);
  let svc: TestService;
  let upstream: Upstream;
  let key: string;
  let api: ReturnType<typeof client>;

  before(async () => {
    // No currency in the answer: the price is in the context's currency.
    upstream = await startUpstream((req, res) => sendJson(res, 200, { price: req.path === '/kwd' ? '1.5' : '1500', confidence: 0.5 }));
    svc = await startTestService({ config: usageConfig });
    key = (await createKey(svc, await signUp(svc, 'minor-units'), { name: 'minor units' })).key;
    api = client(svc.url, { 'x-api-key': key });
  });
  after(async () => {
    await svc?.close();
    await upstream?.close();
  });

  const pinned = async (path: string): Promise<string> => {
    const created = await api.post<Record<string, any>>('/api/functions', { name: unique('minor'), execution_type: 'external_api', endpoint_url: upstream.url(path), cost_per_unit: '0.0025' });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.function.id as string;
    expect((await api.patch(`/api/functions/${id}`, { status: 'active' })).status).to.equal(200);
    return id;
  };

  for (const [currency, path, expected] of [
    ['JPY', '/jpy', '1500'],
    ['KWD', '/kwd', '1.500'],
  ] as const) {
    it(`shows a ${currency} price in the receipt, the event and the list as the compute response does (${expected}), and the cost unchanged`, async () => {
      const fn = await pinned(path);
      const priced = await price(svc, { 'x-api-key': key }, { context: { current_price: 10, currency }, function_id: fn });
      expect(priced.body).to.include({ price: expected, currency });
      const receipt = priced.body.receipt.usage_event as Record<string, unknown>;
      expect(receipt).to.include({ price: expected, currency, cost: '0.0025', cost_currency: 'USDC' });
      expect(receipt.cost).to.equal(priced.cost);

      const one = await api.get<Record<string, any>>(`/api/usage/events/${priced.eventId}`);
      expect(one.status, one.text).to.equal(200);
      expect(one.body.usage_event).to.include({ price: expected, currency, cost: '0.0025' });
      const list = await api.get<Record<string, any>>('/api/usage/events?limit=100');
      expect(list.status, list.text).to.equal(200);
      const listed = (list.body.data as Array<Record<string, unknown>>).find((e) => e.id === priced.eventId);
      expect(listed).to.include({ price: expected, currency, cost: '0.0025' });
      const outcome = await api.patch<Record<string, any>>(`/api/usage/events/${priced.eventId}/outcome`, { outcome: 'accepted' });
      expect(outcome.status, outcome.text).to.equal(200);
      expect(outcome.body.usage_event).to.include({ price: expected, currency });
    });
  }
});
