import { expect } from 'chai';
import { startTestService } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, registerSandbox, signUp } from '../../support/world';

const lenient = {
  limits: {
    registrations: { perAddressPerDay: 10_000, overallPerDay: 100_000 },
    rateLimit: { perWorkspacePerMinute: 100_000, perAddressPerMinute: 100_000, failedAuthPerAddressPer15Min: 100_000 },
  },
};

const hoursAgo = (h: number) => new Date(Date.now() - h * 3_600_000).toISOString();
const daysAgo = (d: number) => hoursAgo(d * 24);

async function contributor(svc: TestService, label: string): Promise<{ key: string; workspaceId: string }> {
  const person = await signUp(svc, label);
  return { key: (await createKey(svc, person, { name: label })).key, workspaceId: person.workspaceId };
}

async function contribute(svc: TestService, key: string, productType: string, source: string, amounts: string[], ageHours = 2): Promise<void> {
  const res = await client(svc.url, { 'x-api-key': key }).post('/api/data/observations', {
    observations: amounts.map((amount, i) => ({ product_type: productType, currency: 'USD', amount, observed_at: hoursAgo(ageHours + i), source })),
  });
  expect(res.status, res.text).to.equal(201);
}

describe('price verification API', function () {
  this.timeout(90_000);
  let svc: TestService;
  let caller: { key: string; workspaceId: string };

  before(async () => {
    svc = await startTestService({ config: lenient });
    caller = await contributor(svc, 'verifier');
    // Five other workspaces (each counts once: five is the minimum) observed "widget" prices around 20 USD.
    await contribute(svc, (await contributor(svc, 'shop-a')).key, 'widget', 'shelf-scan', ['19.50', '20.50']);
    await contribute(svc, (await contributor(svc, 'shop-b')).key, 'widget', 'competitor-site', ['20.00', '20.20']);
    await contribute(svc, (await contributor(svc, 'shop-c')).key, 'widget', 'marketplace', ['19.80', '20.40']);
    await contribute(svc, (await contributor(svc, 'shop-d')).key, 'widget', 'catalogue', ['19.90', '20.30']);
    await contribute(svc, (await contributor(svc, 'shop-e')).key, 'widget', 'flyer', ['19.70', '20.10']);
  });
  after(() => svc.close());

  const verify = (body: unknown, key = caller.key) => client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/price-router/verify', body);

  it('answers reasonable, high and low with the evidence (reference, band, independence, confidence, thresholds)', async () => {
    const ok = await verify({ context: { product_type: 'Widget', currency: 'usd' }, proposed_price: '20.10' });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body).to.include({ object: 'price_verification', verdict: 'reasonable', proposed_price: '20.10', currency: 'USD', product_type: 'Widget', basis: 'observations' });
    // Each shop's two quotes an hour apart weigh alike: its median is their mean (20.00, 20.10, 20.10, 20.10, 19.90).
    expect(ok.body.reference).to.include({ price: '20.10', statistic: 'time_weighted_median_of_source_medians', observations: 10, sources: 5, effective_n: 5, half_life_days: 30 });
    expect(ok.body.reference.source_labels.map((s: any) => s.label).sort()).to.deep.equal(['catalogue', 'competitor-site', 'flyer', 'marketplace', 'shelf-scan']);
    expect(ok.body.reference).to.include.keys('newest_age_days', 'oldest_age_days', 'median_age_days', 'effective_n');
    expect(ok.body.band).to.include({ lower_open: false, upper_open: false });
    expect(ok.body.band.lower).to.match(/^\d+\.\d+$/);
    expect(ok.body.band.upper).to.match(/^\d+\.\d+$/);
    expect(ok.body.independence).to.include({ independent: true });
    expect(ok.body.confidence).to.be.a('number').greaterThan(0);
    expect(ok.body.thresholds).to.deep.equal({ min_effective_observations: 5, min_sources: 2, half_life_days: 30, max_age_days: 120, band_k: 3, min_relative_half_width: 0.05 });
    expect(ok.body.receipt.usage_event_id).to.match(/^use_/);
    expect(ok.body.request_id).to.be.a('string');

    const high = await verify({ context: { product_type: 'widget' }, proposed_price: 45 });
    expect(high.body.verdict).to.equal('high');
    expect(high.body.currency).to.equal('USD');
    const low = await verify({ context: { product_type: 'widget', currency: 'USD' }, proposed_price: '9.99' });
    expect(low.body.verdict).to.equal('low');
  });

  it("shows amounts in the currency's minor units at least, as compute and the receipt do (JPY 1500, KWD 1.500)", async () => {
    for (const [currency, sent, shown, floor] of [
      ['JPY', 1500, '1500', '1'],
      ['KWD', 1.5, '1.500', '1.000'],
      ['JPY', '1500.5', '1500.5', '1'],
      ['USD', 4, '4.00', '1.00'],
    ] as const) {
      const res = await verify({ context: { product_type: 'no-such-goods', currency, unit_cost: 1 }, proposed_price: sent });
      expect(res.status, res.text).to.equal(200);
      expect([res.body.proposed_price, res.body.constraints.floor.value, res.body.band.lower], `${currency} ${sent}`).to.deep.equal([shown, floor, floor]);
      const event = await client(svc.url, { 'x-api-key': caller.key }).get<Record<string, any>>(`/api/usage/events/${res.body.receipt.usage_event_id as string}`);
      expect(event.body.usage_event?.price, event.text).to.equal(shown);
    }
  });

  it("says among its reasons that context.competitor_prices is not evidence, pointing at observations; a context without one gets no such reason", async () => {
    const listed = await verify({ context: { product_type: 'no-such-goods', competitor_prices: [5, 5.1, 5.2] }, proposed_price: '5.05' });
    expect(listed.status, listed.text).to.equal(200);
    expect(listed.body.verdict).to.equal('unknown');
    expect(listed.body.reasons).to.include(
      "context.competitor_prices (3) is not evidence for a verdict: a caller's own list is one unverified source; the band rests on observations workspaces recorded (POST /api/data/observations records these, from a claimed workspace)",
    );
    const plain = await verify({ context: { product_type: 'no-such-goods' }, proposed_price: '5.05' });
    expect((plain.body.reasons as string[]).some((r) => r.includes('competitor_prices'))).to.equal(false);
  });

  it('records the proposed price exactly in the usage event, every decimal kept, and the receipt shows it as GET does (0.000000001, 18 digits either side)', async () => {
    for (const sent of ['0.000000001', '12.123456789', '999999999999999999.999999999999999999']) {
      const res = await verify({ context: { product_type: 'no-such-goods', currency: 'USD' }, proposed_price: sent });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.proposed_price).to.equal(sent);
      expect(res.body.receipt.usage_event.price, 'receipt').to.equal(sent);
      const event = await client(svc.url, { 'x-api-key': caller.key }).get<Record<string, any>>(`/api/usage/events/${res.body.receipt.usage_event_id as string}`);
      expect(event.body.usage_event?.price, event.text).to.equal(sent);
    }
  });

  it('refuses a JSON-number price or bound above 2^53 with 400 asking for a decimal string (it arrives rounded), and judges the same value sent as a string digit for digit', async () => {
    // The client's JSON writer sends 123456789012345678 as is; JSON.parse makes it …680, another price.
    const raw = async (text: string) =>
      client(svc.url, { 'x-api-key': caller.key }).raw<Record<string, any>>('POST', '/api/price-router/verify', { rawBody: text, headers: { 'content-type': 'application/json' } });
    for (const [text, path] of [
      ['{"context": {"product_type": "no-such-goods"}, "proposed_price": 123456789012345678}', 'proposed_price'],
      ['{"context": {"product_type": "no-such-goods"}, "price": 999999999999999999}', 'price'],
      ['{"context": {"product_type": "no-such-goods", "max_price": 123456789012345678}, "proposed_price": "5"}', 'context.max_price'],
    ] as const) {
      const res = await raw(text);
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues, text).to.have.length(1);
      expect(res.body.issues[0].path, text).to.equal(path);
      expect(res.body.issues[0].reason, text).to.match(/too large to arrive exactly as a JSON number .* send it as a decimal string/);
    }
    const exact = await raw('{"context": {"product_type": "no-such-goods"}, "proposed_price": "123456789012345678"}');
    expect(exact.status, exact.text).to.equal(200);
    expect(exact.body.proposed_price).to.equal('123456789012345678.00');
    expect((await raw('{"context": {"product_type": "no-such-goods"}, "proposed_price": 9007199254740991}')).status).to.equal(200);
  });

  it('counts answered verifications by verdict and channel in the metrics (price_verifications_total), every series from the start; a refused one is not counted', async () => {
    const counts = async (): Promise<Record<string, number>> => {
      const text = await (await fetch(`${svc.url}/metrics`)).text();
      return Object.fromEntries([...text.matchAll(/^price_verifications_total\{verdict="(\w+)",channel="(\w+)"\} (\d+)$/gm)].map((m) => [`${m[1]}/${m[2]}`, Number(m[3])]));
    };
    const before = await counts();
    expect(Object.keys(before)).to.have.length(12);
    await verify({ context: { product_type: 'widget' }, proposed_price: 45 });
    await verify({ context: { product_type: 'widget' }, proposed_price: '20.10' });
    await verify({ context: { product_type: 'nothing-known' }, proposed_price: 1 });
    expect((await verify({ context: { product_type: 'widget' }, proposed_price: -1 })).status).to.equal(400);
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'widget' }, proposed_price: 9 });
    expect(demo.status, demo.text).to.equal(200);
    const after = await counts();
    const grew = Object.fromEntries(Object.entries(after).filter(([k, v]) => v !== before[k]).map(([k, v]) => [k, v - (before[k] ?? 0)]));
    expect(grew).to.deep.equal({ 'high/api': 1, 'reasonable/api': 1, 'unknown/api': 1, 'low/demo': 1 });
  });

  it('refuses a current_price out of range with 400 naming it (a 1e19 or 1e-20 one failed the verdict with a 500)', async () => {
    const api = client(svc.url, { 'x-api-key': caller.key });
    for (const current of [1e19, 1e-20, '0']) {
      const res = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'x', current_price: current }, proposed_price: 5 });
      expect(res.status, `${current}: ${res.text}`).to.equal(400);
      expect(res.body.issues.map((i: { path: string }) => i.path)).to.include('context.current_price');
    }
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'x', current_price: 1e-20 }, proposed_price: 5 });
    expect(demo.status).to.equal(400);
  });

  it('refuses a product_type longer than observations store (100 characters) with 400 naming it, on both verify routes; 100 is accepted', async () => {
    const api = client(svc.url, { 'x-api-key': caller.key });
    const long = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'x'.repeat(101) }, proposed_price: 5 });
    expect(long.status, long.text).to.equal(400);
    expect(long.body.issues).to.deep.equal([{ path: 'context.product_type', reason: 'product_type is at most 100 characters, as observations store it (a longer one matches none)' }]);
    expect(long.body.example.context).not.to.have.property('product_type');
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'x'.repeat(5000) }, proposed_price: 5 });
    expect(demo.status).to.equal(400);
    expect(demo.text.length, 'the name is not echoed').to.be.below(3000);
    expect((await api.post('/api/price-router/verify', { context: { product_type: 'x'.repeat(100) }, proposed_price: 5 })).status).to.equal(200);
  });

  it('refuses an empty or blank product_type with 400 at context.product_type in the words observations use, spending no call, on both verify routes and over MCP', async () => {
    const api = client(svc.url, { 'x-api-key': caller.key });
    const used = async () => ((await svc.sequelize.query(`SELECT count(*)::int AS n FROM usage_events WHERE workspace_id = $1`, { bind: [caller.workspaceId] }))[0][0] as { n: number }).n;
    const before = await used();
    for (const productType of ['', '   ', '\t']) {
      const res = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: productType }, proposed_price: 20 });
      expect(res.status, `${JSON.stringify(productType)}: ${res.text}`).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: 'context.product_type', reason: 'product_type must not be empty' }]);
      const demo = await client(svc.url).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: productType }, proposed_price: 20 });
      expect(demo.status, demo.text).to.equal(400);
    }
    const tool = await api.post<Record<string, any>>('/api/mcp/rpc', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'verify_price', arguments: { context: { product_type: '' }, proposed_price: 20 } } }, { accept: 'application/json, text/event-stream' });
    expect(JSON.stringify(tool.body)).to.contain('product_type must not be empty');
    expect(await used()).to.equal(before);
  });

  it('takes current_price as the docs say (a non-negative number, 0 included), with one issue per refusal and a message saying so', async () => {
    const api = client(svc.url, { 'x-api-key': caller.key });
    const zero = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'widget', current_price: 0 }, proposed_price: '20.10' });
    expect(zero.status, zero.text).to.equal(200);
    expect(zero.body.verdict).to.equal('reasonable');
    for (const [bad, reason] of [
      [-3, 'current_price must be a non-negative number'],
      ['4.5', 'current_price must be a JSON number, not a string: send 4.5 without quotes'],
      ['cheap', 'current_price must be a non-negative number, not a string'],
    ] as const) {
      const res = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'widget', current_price: bad }, proposed_price: '20.10' });
      expect(res.status, `${JSON.stringify(bad)}: ${res.text}`).to.equal(400);
      expect(res.body.issues, JSON.stringify(bad)).to.deep.equal([{ path: 'context.current_price', reason }]);
    }
    const tooPrecise = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'widget', current_price: 1e-20 }, proposed_price: '20.10' });
    expect(tooPrecise.body.issues).to.deep.equal([{ path: 'context.current_price', reason: 'current_price must be a non-negative number with at most 18 digits before and after the point' }]);
  });

  it('does not match another currency or product type', async () => {
    const eur = await verify({ context: { product_type: 'widget', currency: 'EUR' }, proposed_price: '20' });
    expect(eur.body.verdict).to.equal('unknown');
    expect(eur.body.reference).to.equal(null);
    const gadget = await verify({ context: { product_type: 'gadget' }, proposed_price: '20' });
    expect(gadget.body.verdict).to.equal('unknown');
    const none = await verify({ context: { current_price: 20 }, proposed_price: '20' });
    expect(none.body.verdict).to.equal('unknown');
    expect(none.body.reasons[0]).to.match(/no product_type/);
    // An unknown for want of evidence says what would decide the next verdict.
    for (const res of [eur, gadget, none]) expect(res.body.hint).to.contain('unit_cost or min_price as a floor, max_price as a ceiling');
    // Bounds the context gave are not asked for again: between a floor and a ceiling only the market decides.
    const between = await verify({ context: { product_type: 'gadget', unit_cost: 1, max_price: 30 }, proposed_price: '20' });
    expect(between.body.verdict).to.equal('unknown');
    expect(between.body.hint).to.contain('Your floor and ceiling decide only a price beyond them').and.not.contain('unit_cost or min_price as a floor');
    const floorOnly = await verify({ context: { product_type: 'gadget', unit_cost: 1 }, proposed_price: '20' });
    expect(floorOnly.body.hint).to.contain('decide a verdict without it: max_price as a ceiling (the bound you gave decides only a price beyond it).');
    // A verdict the caller's own bound decided needs no such hint.
    const floored = await verify({ context: { product_type: 'gadget', min_price: 25 }, proposed_price: '20' });
    expect(floored.body.verdict).to.equal('low');
    expect(floored.body).to.not.have.property('hint');
  });

  it('answers a keyless call with 401 whose try_demo is the keyless verification, whose example it verifies', async () => {
    const res = await client(svc.url).post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'widget' }, proposed_price: '20' });
    expect(res.status, res.text).to.equal(401);
    const demo = (res.body.next as Array<Record<string, any>>).find((n) => n.action === 'try_demo');
    expect(demo).to.deep.include({ method: 'POST', path: '/api/public/price-router/verify' });
    const tried = await client(svc.url).post<Record<string, any>>(demo?.path as string, demo?.body);
    expect(tried.status, tried.text).to.equal(200);
    expect(tried.body.verdict).to.be.oneOf(['reasonable', 'high', 'low', 'unknown']);
    // Compute's 401 still offers the compute demo.
    const compute = await client(svc.url).post<Record<string, any>>('/api/compute/price', { context: { current_price: 5 } });
    expect((compute.body.next as Array<Record<string, any>>).find((n) => n.action === 'try_demo')?.path).to.equal('/api/public/compute/demo');
  });

  it('records every verification as a usage event (operation verify, channel api)', async () => {
    const res = await verify({ context: { product_type: 'widget', category: 'tools' }, proposed_price: '20' });
    const [rows] = await svc.sequelize.query(`SELECT workspace_id, operation, channel, status, price::text AS price, currency, classification, cost::text AS cost, context_keys FROM usage_events WHERE id = $1`, {
      bind: [res.body.receipt.usage_event_id],
    });
    expect(rows[0]).to.deep.include({ workspace_id: caller.workspaceId, operation: 'verify', channel: 'api', status: 'ok', currency: 'USD', classification: 'mine' });
    expect(Number((rows[0] as any).price)).to.equal(20);
    expect((rows[0] as any).context_keys).to.include({ product_type: 'widget', category: 'tools' });
  });

  describe('proposed_price and its alias price', () => {
    it('declares exactly one of them sent, not null (oneOf: both sent match both; null reads as absent) in the OpenAPI request bodies and in the MCP verify_price inputSchema', async () => {
      const doc = (await client(svc.url).get<Record<string, any>>('/api/openapi.json?format=json')).body;
      const sent = (key: string) => ({ required: [key], properties: { [key]: { not: { type: 'null' } } } });
      const need = [sent('proposed_price'), sent('price')];
      for (const path of ['/api/price-router/verify', '/api/public/price-router/verify']) {
        let schema = doc.paths[path].post.requestBody.content['application/json'].schema as Record<string, any>;
        if (schema.$ref) schema = doc.components.schemas[(schema.$ref as string).split('/').pop() as string];
        expect(schema.oneOf, path).to.deep.equal(need);
      }
      const tools = await client(svc.url, { 'x-api-key': caller.key }).post<Record<string, any>>('/api/mcp/rpc', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { accept: 'application/json, text/event-stream' });
      const tool = (tools.body.result.tools as Array<Record<string, any>>).find((t) => t.name === 'verify_price');
      expect(tool?.inputSchema.oneOf).to.deep.equal(need);
    });

    it('accepts price when proposed_price is absent', async () => {
      const res = await verify({ context: { product_type: 'widget' }, price: 20.1 });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.proposed_price).to.equal('20.10');
      expect(res.body.verdict).to.equal('reasonable');
    });

    it('refuses both with 400 naming price', async () => {
      const res = await verify({ context: { product_type: 'widget' }, proposed_price: '20', price: '20' });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues.map((i: any) => i.path)).to.deep.equal(['price']);
      expect(res.body.issues[0].reason).to.match(/only when proposed_price is absent/);
    });

    it('answers both missing with an issue naming proposed_price whose message mentions the price alias', async () => {
      const res = await verify({ context: { product_type: 'widget' } });
      expect(res.status).to.equal(400);
      expect(res.body.issues).to.deep.equal([{ path: 'proposed_price', reason: 'proposed_price is required: a positive number or decimal string (the alias price is accepted when proposed_price is absent)' }]);
      expect(res.body.message).to.contain('proposed_price');
      expect(res.body.message).to.match(/alias price/);
      // The example keeps the context sent and adds the price it lacks.
      expect(res.body.example).to.deep.equal({ context: { product_type: 'widget' }, proposed_price: '4.50' });
    });

    it("makes the 400's example from what was sent: refused context keys and unknown fields left out, the price kept as sent or replaced when refused", async () => {
      const kept = await verify({ context: { product_type: 'widget', currency: 'EUR', unit_cost: -1, max_price: 'lots' }, proposed_price: 4.5, extra: 1 });
      expect(kept.status).to.equal(400);
      expect(kept.body.example).to.deep.equal({ context: { product_type: 'widget', currency: 'EUR' }, proposed_price: 4.5 });
      const both = await verify({ context: { product_type: 'widget' }, proposed_price: '20', price: '20' });
      expect(both.body.example).to.deep.equal({ context: { product_type: 'widget' }, proposed_price: '20' });
      const refusedAlias = await verify({ context: { product_type: 'widget' }, price: -2 });
      expect(refusedAlias.body.example).to.deep.equal({ context: { product_type: 'widget' }, proposed_price: '4.50' });
      const refused = await verify({ context: 'nope', proposed_price: 'abc' });
      expect(refused.body.example).to.deep.equal({ context: { product_type: 'coffee', currency: 'USD', unit_cost: 1.2 }, proposed_price: '4.50' });
      // The keyless demo's verify answers the same way.
      const demo = await client(svc.url).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'widget', unit_cost: 'x' }, proposed_price: 7 });
      expect(demo.status).to.equal(400);
      expect(demo.body.example).to.deep.equal({ context: { product_type: 'widget' }, proposed_price: 7 });
    });

    it('reports the missing price together with other problems', async () => {
      const res = await verify({ context: 'nope' });
      expect(res.status).to.equal(400);
      expect(res.body.issues.map((i: any) => i.path)).to.include.members(['context', 'proposed_price']);
    });

    it('refuses a price that is not positive, or too large, saying what it must be', async () => {
      for (const bad of [0, -1, '0.00', '-3.5', '000', 1e308, 5e-324, 1e-19, '1'.padEnd(30, '0')]) {
        const res = await verify({ context: { product_type: 'widget' }, proposed_price: bad });
        expect(res.status, `${JSON.stringify(bad)}: ${res.text}`).to.equal(400);
        expect(res.body.issues).to.deep.equal([
          { path: 'proposed_price', reason: 'must be greater than 0, with at most 18 digits before and after the point: a number or a decimal string, such as 12.5 or "12.50"' },
        ]);
      }
      // A string that is no decimal at all is told so, not that it must be greater than 0.
      for (const bad of ['abc', '1e3', 'NaN', '20.', ' 20 ', '2,000', '+5']) {
        const res = await verify({ context: { product_type: 'widget' }, proposed_price: bad });
        expect(res.status, `${JSON.stringify(bad)}: ${res.text}`).to.equal(400);
        expect(res.body.issues).to.deep.equal([
          { path: 'proposed_price', reason: 'must be a decimal number: digits with at most one point and digits after it, such as "12.50" (no spaces, signs, exponents or thousands separators)' },
        ]);
      }
      const floor = await verify({ context: { product_type: 'widget', max_price: 'lots' }, proposed_price: '20' });
      expect(floor.body.issues).to.deep.equal([{ path: 'context.max_price', reason: 'max_price must be a decimal number: digits with at most one point and digits after it, such as "12.50" (no spaces, signs, exponents or thousands separators)' }]);
      const alias = await verify({ context: { product_type: 'widget' }, price: -2 });
      expect(alias.body.issues[0].path).to.equal('price');
    });

    it('names the rule a price breaks: a leading zero ("0020.10") is refused as such, another JSON type than number or string gets a type error', async () => {
      const reasonFor = async (body: Record<string, unknown>) => ((await verify({ context: { product_type: 'widget' }, ...body })).body.issues as Array<{ path: string; reason: string }>);
      expect(await reasonFor({ proposed_price: '0020.10' })).to.deep.equal([{ path: 'proposed_price', reason: 'must not start with a leading zero: "20.10"' }]);
      expect(await reasonFor({ price: '00.5' })).to.deep.equal([{ path: 'price', reason: 'must not start with a leading zero: "0.5"' }]);
      for (const [bad, kind] of [[[20], 'an array'], [{ amount: 20 }, 'an object'], [true, 'a boolean (true)']] as const) {
        expect(await reasonFor({ proposed_price: bad }), kind).to.deep.equal([{ path: 'proposed_price', reason: `must be a number or a decimal string, such as 12.5 or "12.50", not ${kind}` }]);
      }
      // null reads as absent, as in a compute context: alone, the price is missing.
      expect(await reasonFor({ proposed_price: null })).to.deep.equal([{ path: 'proposed_price', reason: 'proposed_price is required: a positive number or decimal string (the alias price is accepted when proposed_price is absent)' }]);
      const bound = await verify({ context: { product_type: 'widget', unit_cost: '007', max_price: [30] }, proposed_price: '20' });
      expect(bound.body.issues).to.deep.equal([
        { path: 'context.unit_cost', reason: 'unit_cost must not start with a leading zero: "7"' },
        { path: 'context.max_price', reason: 'max_price must be a number or a decimal string, such as 12.5 or "12.50", not an array' },
      ]);
    });

    it('refuses a JSON number whose text a double does not hold (20.123456789012345 arrives as …344), asking for the decimal string; one that arrives exactly is judged', async () => {
      const raw = async (text: string) =>
        client(svc.url, { 'x-api-key': caller.key }).raw<Record<string, any>>('POST', '/api/price-router/verify', { rawBody: text, headers: { 'content-type': 'application/json' } });
      const res = await raw('{"context": {"product_type": "widget"}, "proposed_price": 20.123456789012345}');
      expect(res.status, res.text).to.equal(400);
      expect(res.body.code).to.equal('validation_error');
      expect(res.body.issues).to.deep.equal([
        {
          path: 'proposed_price',
          reason: 'must be sent as a decimal string: the JSON number 20.123456789012345 arrives as 20.123456789012344 (a JSON number is read as a double, exact to about 15 significant digits); send "20.123456789012345" in quotes',
        },
      ]);
      expect(res.body.hint).to.match(/^Send these amounts as decimal strings, in quotes/);
      expect(res.body.example).to.deep.equal({ context: { product_type: 'widget' }, proposed_price: '20.123456789012345' });
      // In the context's bounds too, told together with the body's other problems (one reason per field).
      const mixed = await raw('{"context": {"product_type": "widget", "min_price": 1.0000000000000000001, "max_price": "lots"}, "price": 9007199254740993, "extra": 1}');
      expect(mixed.status, mixed.text).to.equal(400);
      expect((mixed.body.issues as Array<{ path: string }>).map((i) => i.path).sort()).to.deep.equal(['context.max_price', 'context.min_price', 'extra', 'price']);
      expect(mixed.body.issues.find((i: { path: string }) => i.path === 'context.min_price').reason).to.match(/^must be sent as a decimal string: the JSON number 1\.0000000000000000001 arrives as 1 /);
      // The same digits as a string are judged digit for digit; a number that arrives as sent (0.30000000000000004, 20.1) is judged as before.
      const exact = await raw('{"context": {"product_type": "widget"}, "proposed_price": "20.123456789012345"}');
      expect(exact.status, exact.text).to.equal(200);
      expect(exact.body.proposed_price).to.equal('20.123456789012345');
      for (const text of ['0.30000000000000004', '20.1', '20.10000000000000']) {
        const ok = await raw(`{"context": {"product_type": "widget"}, "proposed_price": ${text}}`);
        expect(ok.status, `${text}: ${ok.text}`).to.equal(200);
      }
      // A repeated key counts as JSON.parse reads it: the last one.
      expect((await raw('{"context": {"product_type": "widget"}, "proposed_price": 20.123456789012345, "proposed_price": 20.5}')).status).to.equal(200);
      // The keyless demo route refuses it the same way.
      const demo = await client(svc.url).raw<Record<string, any>>('POST', '/api/public/price-router/verify', { rawBody: '{"context": {"product_type": "widget"}, "price": 20.123456789012345}', headers: { 'content-type': 'application/json' } });
      expect(demo.status, demo.text).to.equal(400);
      expect(demo.body.issues[0].path).to.equal('price');
    });

    it('refuses a malformed floor or ceiling in the context and unknown body fields', async () => {
      const res = await verify({ context: { product_type: 'widget', unit_cost: -1, max_price: 'lots' }, proposed_price: '20', extra: 1 });
      expect(res.status).to.equal(400);
      expect(res.body.issues.map((i: any) => i.path)).to.include.members(['context.unit_cost', 'context.max_price', 'extra']);
    });

    it('refuses a floor or ceiling whose decimal form has hundreds of digits (a 500 before), and accepts one at the limits', async () => {
      for (const [key, bad] of [['unit_cost', 1e308], ['min_price', 5e-324], ['max_price', 1e-19]] as const) {
        const res = await verify({ context: { product_type: 'widget', [key]: bad }, proposed_price: '20' });
        expect(res.status, `${key}=${bad}: ${res.text}`).to.equal(400);
        expect(res.body.issues).to.deep.equal([{ path: `context.${key}`, reason: `${key} must be greater than 0, with at most 18 digits before and after the point: a number or a decimal string` }]);
      }
      const edge = await verify({ context: { product_type: 'widget', unit_cost: 1e-18, max_price: 1e17 }, proposed_price: 0.1 + 0.2 });
      expect(edge.status, edge.text).to.equal(200);
      expect(edge.body.constraints).to.deep.include({ ceiling: { value: '100000000000000000.00', from: ['max_price'] } });
    });

    it('answers a body that is not JSON with 400 invalid_json and an example', async () => {
      const res = await client(svc.url, { 'x-api-key': caller.key }).raw<Record<string, any>>('POST', '/api/price-router/verify', { rawBody: 'proposed_price=5', headers: { 'content-type': 'application/json' } });
      expect(res.status).to.equal(400);
      expect(res.body.code).to.equal('invalid_json');
      expect(res.body.example).to.have.property('proposed_price');
    });
  });

  describe('one-sided judgements', () => {
    it('floor only: low below unit cost; otherwise unknown with the band [floor, open)', async () => {
      const low = await verify({ context: { product_type: 'no-history', unit_cost: 5 }, proposed_price: '4' });
      expect(low.body.verdict).to.equal('low');
      expect(low.body.band).to.deep.equal({ lower: '5.00', upper: null, lower_open: false, upper_open: true, method: 'floor_only' });
      expect(low.body.constraints.floor).to.deep.equal({ value: '5.00', from: ['unit_cost'] });
      const fine = await verify({ context: { product_type: 'no-history', unit_cost: 5, min_price: '6.5' }, proposed_price: '7' });
      expect(fine.body.verdict).to.equal('unknown');
      expect(fine.body.band).to.deep.equal({ lower: '6.50', upper: null, lower_open: false, upper_open: true, method: 'floor_only' });
    });

    it('a bound sent as null reads as absent, as in a compute context: unit_cost null with min_price 5 is the floor 5, max_price null no ceiling', async () => {
      const res = await verify({ context: { product_type: 'no-history', unit_cost: null, min_price: '5', max_price: null }, proposed_price: '4' });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.verdict).to.equal('low');
      expect(res.body.constraints).to.deep.equal({ floor: { value: '5.00', from: ['min_price'] }, ceiling: null });
      expect(res.body.band).to.include({ lower: '5.00', upper: null, method: 'floor_only' });
    });

    it('ceiling only: high above max_price', async () => {
      const res = await verify({ context: { product_type: 'no-history', max_price: '10' }, proposed_price: '12' });
      expect(res.body.verdict).to.equal('high');
      expect(res.body.band).to.deep.equal({ lower: null, upper: '10.00', lower_open: true, upper_open: false, method: 'ceiling_only' });
    });
  });

  describe('independence disclosure', () => {
    it('flags evidence from the caller\'s own workspace and excludes its echo of the proposed price', async () => {
      const own = await contributor(svc, 'self-citer');
      await contribute(svc, own.key, 'gizmo', 'my-shop', ['31.00', '30.00', '30.50']);
      await contribute(svc, (await contributor(svc, 'gizmo-a')).key, 'gizmo', 'a', ['30.20', '29.90']);
      await contribute(svc, (await contributor(svc, 'gizmo-b')).key, 'gizmo', 'b', ['30.40', '30.10']);
      const res = await verify({ context: { product_type: 'gizmo', current_price: 30.5 }, proposed_price: '31.00' }, own.key);
      expect(res.status, res.text).to.equal(200);
      expect(res.body.independence.independent).to.equal(false);
      expect(res.body.independence.excluded_circular).to.equal(2);
      expect(res.body.independence.own_workspace_observations).to.equal(1);
      expect(res.body.independence.reasons.join(' ')).to.match(/come from your own workspace/);
      expect(res.body.independence.reasons.join(' ')).to.match(/excluded as circular/);
      // Seen from another workspace, the same evidence is independent and nothing is excluded.
      const outsider = await verify({ context: { product_type: 'gizmo' }, proposed_price: '31.00' });
      expect(outsider.body.independence.independent).to.equal(true);
      expect(outsider.body.independence.excluded_circular).to.equal(0);
      expect(outsider.body.reference.observations).to.equal(7);
    });

    it('flags single-source evidence and answers unknown on it', async () => {
      const feed = await contributor(svc, 'feed');
      await contribute(svc, feed.key, 'doohickey', 'one-feed', ['5.00', '5.10', '5.20', '5.30', '5.40', '5.50', '5.60']);
      const res = await verify({ context: { product_type: 'doohickey' }, proposed_price: '5.25' });
      expect(res.body.verdict).to.equal('unknown');
      expect(res.body.independence.independent).to.equal(false);
      expect(res.body.independence.reasons[0]).to.match(/fewer than 2 distinct sources/);
    });
  });

  describe('unknown on thin or old evidence', () => {
    it('thin: two observations', async () => {
      const at = hoursAgo(1);
      const api = client(svc.url, { 'x-api-key': (await contributor(svc, 'thin')).key });
      const observations = [
        { product_type: 'rarity', currency: 'USD', amount: '100.00', observed_at: at, source: 'auction-a' },
        { product_type: 'rarity', currency: 'USD', amount: '110.00', observed_at: at, source: 'auction-b' },
      ];
      expect((await api.post('/api/data/observations', { observations })).status).to.equal(201);
      const res = await verify({ context: { product_type: 'rarity' }, proposed_price: '500' });
      expect(res.body.verdict).to.equal('unknown');
      expect(res.body.confidence).to.equal(0);
      // Equal weights: the reference is the median of the two source medians, a real statistic.
      expect(res.body.reference.price).to.equal('105.00');
      expect(res.body.band).to.include({ lower: null, upper: null, lower_open: true, upper_open: true });
      expect(res.body.reasons.join(' ')).to.match(/effective number of independent submitters 1 is below the minimum 5/);
    });

    it('split: quotes in two groups (9.90–10.20 and 19.80–20.40) answer unknown naming the groups, with a hint to tell them apart', async () => {
      // One set of times for every workspace, so the two groups weigh exactly alike and the reference is their midpoint.
      const base = Date.now() - 3_600_000;
      for (const [label, amounts] of [
        ['bimodal-a', ['9.90', '10.00', '10.10', '10.20']],
        ['bimodal-b', ['9.95', '10.05', '10.15']],
        ['bimodal-c', ['19.80', '20.00', '20.20', '20.40']],
        ['bimodal-d', ['19.90', '20.10', '20.30']],
      ] as const) {
        const api = client(svc.url, { 'x-api-key': (await contributor(svc, label)).key });
        const observations = amounts.map((amount, i) => ({ product_type: 'bimodal', currency: 'USD', amount, observed_at: new Date(base - i * 3_600_000).toISOString(), source: label }));
        expect((await api.post('/api/data/observations', { observations })).status).to.equal(201);
      }
      for (const price of ['3.50', '60.00']) {
        const res = await verify({ context: { product_type: 'bimodal' }, proposed_price: price });
        expect(res.status, res.text).to.equal(200);
        expect(res.body, price).to.include({ verdict: 'unknown', confidence: 0 });
        expect(res.body.reference.price, price).to.equal('15.075');
        expect(res.body.reasons, price).to.include('quotes split into two groups around 10.05 and 20.10: the reference 15.075 lies in the gap between them, with 0% of the weight within 19% of it');
        expect(res.body.hint, price).to.match(/^The quotes fall into two separate price groups \(around 10\.05 and 20\.10\), .* Not enough market evidence/);
      }
      // Compute positions on the same evidence: none, so no price is invented between the groups.
      const computed = await client(svc.url, { 'x-api-key': caller.key }).post<Record<string, any>>('/api/compute/price', { context: { product_type: 'bimodal' } });
      expect(computed.status, computed.text).to.equal(422);
      expect(computed.body.code).to.equal('insufficient_context');
    });

    it('old: everything observed before the max age', async () => {
      const api = client(svc.url, { 'x-api-key': (await contributor(svc, 'archivist')).key });
      const observations = ['a', 'b', 'c', 'd', 'e', 'f'].map((source, i) => ({ product_type: 'antique', currency: 'USD', amount: `${50 + i}.00`, observed_at: daysAgo(130 + i), source }));
      expect((await api.post('/api/data/observations', { observations })).status).to.equal(201);
      const res = await verify({ context: { product_type: 'antique' }, proposed_price: '52' });
      expect(res.body.verdict).to.equal('unknown');
      expect(res.body.reference).to.equal(null);
      expect(res.body.evidence).to.include({ ignored_older_than_max_age: 6, used: 0 });
      expect(res.body.reasons[0]).to.match(/older than 120 days/);
    });
  });

  describe('one workspace flooding another\'s evidence', () => {
    const post = async (key: string, productType: string, observations: Array<{ amount: string; source: string; observed_at: string }>) => {
      const res = await client(svc.url, { 'x-api-key': key }).post('/api/data/observations', { observations: observations.map((o) => ({ product_type: productType, currency: 'USD', ...o })) });
      expect(res.status, res.text).to.equal(201);
    };
    const secondsAgo = (s: number) => new Date(Date.now() - 3_600_000 - s * 1000).toISOString();
    const compute = (productType: string) => client(svc.url, { 'x-api-key': caller.key }).post<Record<string, any>>('/api/compute/price', { context: { product_type: productType } });

    /** One workspace's six honest quotes at 18–25 under three labels: alone, they give no verdict. */
    async function honestSix(productType: string): Promise<void> {
      const labels = ['shelf', 'shelf', 'web', 'web', 'kiosk', 'kiosk'];
      await post((await contributor(svc, `${productType}-honest`)).key, productType, ['18', '20', '21', '23', '22', '25'].map((amount, i) => ({ amount, source: labels[i] as string, observed_at: hoursAgo(2 + i) })));
      expect((await verify({ context: { product_type: productType }, proposed_price: '22' })).body.verdict).to.equal('unknown');
    }

    it('38 quotes of 100 from one workspace count once and make no price reasonable; compute gets no network reference to position on', async () => {
      await honestSix('r2widget');
      await post((await contributor(svc, 'r2-flood')).key, 'r2widget', Array.from({ length: 38 }, (_, i) => ({ amount: '100', source: i % 2 ? 'feed-1' : 'feed-2', observed_at: secondsAgo(i) })));
      for (const price of ['22', '61', '100']) {
        const res = await verify({ context: { product_type: 'r2widget' }, proposed_price: price });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.verdict, price).to.equal('unknown');
        expect(res.body.evidence.sufficient, price).to.equal(false);
        expect(res.body.independence).to.include({ duplicates_removed: 37, workspaces: 2 });
        expect(res.body.reference.observations).to.equal(7);
        // The two workspaces weigh alike after the cap: the reference is near the midpoint of A's middle source median and 100.
        expect(Number(res.body.reference.price)).to.be.within(55, 65);
        expect(res.body.reasons).to.include(`the reference rests on one workspace: without the one that submitted 86% of the weight it would be 100.00, not ${res.body.reference.price as string}`);
      }
      const computed = await compute('r2widget');
      expect(computed.status, computed.text).to.equal(422);
      expect(computed.body.code).to.equal('insufficient_context');
    });

    it('38 distinct quotes near 100 from one workspace: unknown, saying the reference rests on it, and no network reference for compute', async () => {
      await honestSix('r2widget-b');
      await post((await contributor(svc, 'r2-distinct')).key, 'r2widget-b', Array.from({ length: 38 }, (_, i) => ({ amount: (100 + (i + 1) / 100).toFixed(2), source: i % 2 ? 'feed-1' : 'feed-2', observed_at: secondsAgo(i) })));
      const res = await verify({ context: { product_type: 'r2widget-b' }, proposed_price: '61' });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.verdict).to.equal('unknown');
      // 44 distinct quotes from two submitters: two independent ones, however many quotes each posts.
      expect(res.body.reference.effective_n).to.equal(2);
      expect(res.body.independence.workspaces).to.equal(2);
      const rests = (res.body.reasons as string[]).find((r) => r.startsWith('the reference rests on one workspace'));
      const without = /^the reference rests on one workspace: without the one that submitted 86% of the weight it would be (\d+\.\d+), not (\d+\.\d+)$/.exec(rests ?? '');
      expect(without, rests).to.not.equal(null);
      // Without the flooder, the reference is among the honest quotes; with it, it is not.
      expect(Number(without?.[1])).to.be.within(18, 25);
      expect(without?.[2]).to.equal(res.body.reference.price);
      expect(Number(res.body.reference.price)).to.be.greaterThan(25);
      const computed = await compute('r2widget-b');
      expect(computed.status, computed.text).to.equal(422);
      expect(computed.body.code).to.equal('insufficient_context');
    });
  });

  it("counts a person's workspace and its test workspace as one submitter: their quotes alone are not independent evidence", async () => {
    const frank = await signUp(svc, 'frank-two-workspaces');
    for (const [headers, amounts] of [
      [{ cookie: frank.cookie }, ['99', '100', '101']],
      [{ cookie: frank.cookie, 'x-workspace-id': frank.testWorkspaceId }, ['99.5', '100.5', '100.2']],
    ] as const) {
      const res = await client(svc.url, headers).post('/api/data/observations', {
        observations: amounts.map((amount, i) => ({ product_type: 'one-account-widget', currency: 'USD', amount, observed_at: hoursAgo(2 + i), source: 'frank-shop' })),
      });
      expect(res.status, res.text).to.equal(201);
    }
    const v = await verify({ context: { product_type: 'one-account-widget' }, proposed_price: '80' });
    expect(v.status, v.text).to.equal(200);
    expect(v.body.verdict).to.equal('unknown');
    expect(v.body.independence).to.include({ independent: false, workspaces: 1 });
    // Frank verifying from his test workspace sees them as his own account's quotes.
    const own = await client(svc.url, { cookie: frank.cookie, 'x-workspace-id': frank.testWorkspaceId }).post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'one-account-widget' }, proposed_price: '100' });
    expect(own.status, own.text).to.equal(200);
    expect(own.body.independence).to.include({ workspaces: 1 });
  });

  it('sees new contributions at once although evidence is cached between verifications', async () => {
    const first = await contributor(svc, 'fresh-a');
    // Three observations each from two workspaces: the evidence of each is read afresh once the other's is posted.
    await contribute(svc, first.key, 'thingamajig', 'a', ['7.00', '7.10', '6.95']);
    const before = await verify({ context: { product_type: 'thingamajig' }, proposed_price: '7' });
    expect(before.body.reference.observations).to.equal(3);
    expect((await verify({ context: { product_type: 'thingamajig' }, proposed_price: '7' })).body.reference.observations).to.equal(3);
    await contribute(svc, (await contributor(svc, 'fresh-b')).key, 'THINGAMAJIG', 'b', ['7.20', '6.90', '7.05']);
    const after = await verify({ context: { product_type: 'thingamajig' }, proposed_price: '7' });
    expect(after.body.reference.observations).to.equal(6);
    expect(after.body.independence.workspaces).to.equal(2);
  });

  it('makes an accepted compute outcome an observation, once per usage event, and withdraws it when rejected', async () => {
    const api = client(svc.url, { 'x-api-key': caller.key });
    const computed = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'sprocket', category: 'parts', unit_cost: 4, target_margin: 0.5 }, function_id: 'fn_builtin_cost_plus' });
    expect(computed.status, computed.text).to.equal(200);
    const eventId = computed.body.receipt.usage_event_id as string;
    const [events] = await svc.sequelize.query(`SELECT price::text AS price, currency, function_name, context_keys FROM usage_events WHERE id = $1`, { bind: [eventId] });
    const ev = events[0] as { price: string; currency: string; function_name: string; context_keys: Record<string, unknown> };
    const payload = {
      eventId,
      workspaceId: caller.workspaceId,
      outcome: 'accepted' as const,
      qualityScore: 0.9,
      functionId: 'fn_builtin_cost_plus',
      functionName: ev.function_name,
      price: ev.price,
      currency: ev.currency,
      contextKeys: ev.context_keys,
      networkEvidence: false,
      at: new Date().toISOString(),
      calledAt: computed.body.receipt.recorded_at as string,
    };
    await svc.events.emit('usage.outcome_recorded', payload);
    await svc.events.emit('usage.outcome_recorded', payload);
    const listed = await api.get<Record<string, any>>('/api/data/observations?origin=accepted_outcome&product_type=sprocket');
    expect(listed.body.data).to.have.length(1);
    expect(listed.body.data[0]).to.include({ origin: 'accepted_outcome', source: 'accepted:cost-plus', usage_event_id: eventId, product_type: 'sprocket', currency: 'USD', amount: '8.00' });
    expect(listed.body.data[0].context).to.deep.equal({ category: 'parts' });

    // Without a product type, a price or a function there is nothing to record.
    await svc.events.emit('usage.outcome_recorded', { ...payload, eventId: 'use_no_product_type_x', contextKeys: {} });
    await svc.events.emit('usage.outcome_recorded', { ...payload, eventId: 'use_no_price_xxxxxxxx', price: null });
    const [counts] = await svc.sequelize.query(`SELECT count(*)::int AS n FROM price_observations WHERE usage_event_id IN ('use_no_product_type_x', 'use_no_price_xxxxxxxx')`);
    expect((counts[0] as { n: number }).n).to.equal(0);

    await svc.events.emit('usage.outcome_recorded', { ...payload, outcome: 'rejected' });
    const after = await api.get<Record<string, any>>('/api/data/observations?origin=accepted_outcome&product_type=sprocket');
    expect(after.body.data).to.have.length(0);
  });

  it("dates an accepted outcome's observation when its price was quoted, not when it was reported: an acceptance turned rejected and back later does not pass the price off as fresh", async () => {
    const api = client(svc.url, { 'x-api-key': caller.key });
    const computed = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'flange', unit_cost: 4, target_margin: 0.5 }, function_id: 'fn_builtin_cost_plus' });
    expect(computed.status, computed.text).to.equal(200);
    const id = computed.body.receipt.usage_event_id as string;
    const quotedAt = computed.body.receipt.recorded_at as string;
    const report = (outcome: string) => api.patch<Record<string, any>>(`/api/usage/events/${id}/outcome`, { outcome });
    await new Promise((r) => setTimeout(r, 1100));
    expect((await report('accepted')).status).to.equal(200);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await report('rejected')).status).to.equal(200);
    expect((await report('accepted')).status).to.equal(200);
    const listed = await api.get<Record<string, any>>('/api/data/observations?origin=accepted_outcome&product_type=flange');
    expect(listed.body.data).to.have.length(1);
    expect(Date.parse(listed.body.data[0].observed_at as string)).to.equal(Date.parse(quotedAt));
  });

  it('never shows a private function\'s name in source labels outside its workspace: others and the demo see accepted:workspace-function, until it is listed publicly, and again once it is not', async () => {
    const owner = await contributor(svc, 'secret-owner');
    const ownerApi = client(svc.url, { 'x-api-key': owner.key });
    const made = await ownerApi.post<Record<string, any>>('/api/functions', { name: `secret-formula-${Date.now()}`, execution_type: 'pipeline', cost_per_unit: '0.001' });
    expect(made.status, made.text).to.equal(201);
    const fn = made.body.function as { id: string; name: string };
    expect((await ownerApi.patch(`/api/functions/${fn.id}`, { status: 'active' })).status).to.equal(200);
    // Two different prices: one workspace's accepted prices of one amount would count once, under one label.
    const accepted = (eventId: string, functionId: string, functionName: string, price: string) =>
      svc.events.emit('usage.outcome_recorded', {
        eventId,
        workspaceId: owner.workspaceId,
        outcome: 'accepted',
        qualityScore: null,
        functionId,
        functionName,
        price,
        currency: 'USD',
        contextKeys: { product_type: 'secret-sauce' },
        networkEvidence: false,
        at: new Date().toISOString(),
        calledAt: new Date().toISOString(),
      });
    await accepted(`use_secret_${Date.now()}`, fn.id, fn.name, '12.00');
    await accepted(`use_builtin_${Date.now()}`, 'fn_builtin_cost_plus', 'cost-plus', '12.50');
    const body = { context: { product_type: 'secret-sauce' }, proposed_price: '13' };
    const labelsOf = (res: { status: number; text: string; body: Record<string, any> }) => {
      expect(res.status, res.text).to.equal(200);
      return (res.body.reference.source_labels as Array<{ label: string }>).map((l) => l.label).sort();
    };

    const outsider = await verify(body);
    expect(labelsOf(outsider)).to.deep.equal(['accepted:cost-plus', 'accepted:workspace-function']);
    expect(outsider.text).to.not.contain(fn.name);
    const demo = await client(svc.url).post<Record<string, any>>('/api/public/price-router/verify', body);
    expect(labelsOf(demo)).to.deep.equal(['accepted:cost-plus', 'accepted:workspace-function']);
    expect(demo.text).to.not.contain(fn.name);
    // Its own workspace knows the name.
    expect(labelsOf(await verify(body, owner.key))).to.deep.equal(['accepted:cost-plus', `accepted:${fn.name}`]);

    // Listed publicly, the name is public; made private again, it is hidden again (judged when shown, not when accepted).
    expect((await ownerApi.patch(`/api/functions/${fn.id}`, { is_public: true })).status).to.equal(200);
    expect(labelsOf(await verify(body))).to.deep.equal(['accepted:cost-plus', `accepted:${fn.name}`]);
    expect((await ownerApi.patch(`/api/functions/${fn.id}`, { is_public: false })).status).to.equal(200);
    const later = await verify(body);
    expect(labelsOf(later)).to.deep.equal(['accepted:cost-plus', 'accepted:workspace-function']);
    expect(later.text).to.not.contain(fn.name);
  });

  it('does not store an accepted price that was positioned on the network\'s own observations (it would echo them back as new evidence)', async () => {
    const api = client(svc.url, { 'x-api-key': caller.key });
    const contributed = await api.post('/api/data/observations', { observations: [{ product_type: 'echo-gear', currency: 'USD', amount: '12.00', source: 'shop', observed_at: new Date().toISOString() }] });
    expect(contributed.status).to.equal(201);
    const onNetwork = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'echo-gear', currency: 'USD' } });
    expect(onNetwork.status, onNetwork.text).to.equal(200);
    expect(onNetwork.body.receipt.usage_event.network_evidence).to.equal(true);
    const ownCost = await api.post<Record<string, any>>('/api/compute/price', { context: { product_type: 'echo-gear', currency: 'USD', unit_cost: 5, target_margin: 0.5 } });
    expect(ownCost.body.receipt.usage_event.network_evidence).to.equal(false);
    for (const r of [onNetwork, ownCost]) {
      const accepted = await api.patch(`/api/usage/events/${r.body.receipt.usage_event_id as string}/outcome`, { outcome: 'accepted' });
      expect(accepted.status, accepted.text).to.equal(200);
    }
    const listed = await api.get<Record<string, any>>('/api/data/observations?origin=accepted_outcome&product_type=echo-gear');
    expect((listed.body.data as Array<Record<string, unknown>>).map((o) => o.usage_event_id)).to.deep.equal([ownCost.body.receipt.usage_event_id]);
  });
});

describe('verification against the sandbox daily limit', function () {
  this.timeout(90_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: lenient });
  });
  after(() => svc.close());

  it('counts verifications: the 26th call of the day answers 429, whether compute or verify', async () => {
    const sandbox = await registerSandbox(svc, 'verifying-agent');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    for (let i = 1; i <= 20; i++) {
      const r = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: i } });
      expect(r.status, `compute ${i}`).to.equal(200);
    }
    for (let i = 21; i <= 25; i++) {
      const r = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'widget' }, proposed_price: i });
      expect(r.status, `verify ${i}: ${r.text}`).to.equal(200);
      expect(r.body.remaining.daily_compute_calls).to.include({ limit: 25, remaining: 25 - i });
    }
    const compute = await api.post<Record<string, any>>('/api/compute/price', { context: { current_price: 26 } });
    expect(compute.status).to.equal(429);
    expect(compute.body.code).to.equal('daily_quota_exceeded');
    const verifyOver = await api.post<Record<string, any>>('/api/price-router/verify', { context: { product_type: 'widget' }, proposed_price: 26 });
    expect(verifyOver.status).to.equal(429);
    expect(verifyOver.body.code).to.equal('daily_quota_exceeded');
    expect(verifyOver.body.retry_after).to.equal(Number(verifyOver.headers.get('retry-after')));
    expect(verifyOver.body.limit).to.include({ compute_calls_per_day: 25 });
    const actions = (verifyOver.body.next as Array<{ action: string }>).map((n) => n.action);
    expect(actions).to.include.members(['claim', 'day_pass', 'top_up']);
    expect(actions).not.to.include('pay_per_call');
    const [rows] = await svc.sequelize.query(`SELECT operation, count(*)::int AS n FROM usage_events WHERE workspace_id = $1 GROUP BY operation ORDER BY operation`, { bind: [sandbox.workspaceId] });
    expect(rows).to.deep.equal([
      { operation: 'compute', n: 20 },
      { operation: 'verify', n: 5 },
    ]);
  });

  it('does not count a verification that fails validation', async () => {
    const sandbox = await registerSandbox(svc, 'careless-agent');
    const api = client(svc.url, { 'x-api-key': sandbox.key });
    expect((await api.post('/api/price-router/verify', { context: {} })).status).to.equal(400);
    const ok = await api.post<Record<string, any>>('/api/price-router/verify', { context: {}, price: 1 });
    expect(ok.body.remaining.daily_compute_calls).to.include({ limit: 25, remaining: 24 });
  });
});

describe('keyless demo verification', function () {
  this.timeout(60_000);
  let svc: TestService;
  before(async () => {
    svc = await startTestService({ config: { limits: { demo: { callsPerHour: 3 } } } });
  });
  after(() => svc.close());

  it('verifies on the demo tenant with budget headers, counts validation errors, and refuses over budget', async () => {
    const api = client(svc.url);
    const ok = await api.post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'widget', unit_cost: 3 }, proposed_price: '2.50' });
    expect(ok.status, ok.text).to.equal(200);
    expect(ok.body).to.include({ demo: true, verdict: 'low' });
    expect(ok.headers.get('x-demo-budget-limit')).to.equal('3');
    expect(ok.headers.get('x-demo-budget-remaining')).to.equal('2');
    expect(Date.parse(ok.headers.get('x-demo-budget-reset') ?? '')).to.be.greaterThan(Date.now());
    expect(ok.body.budget).to.include({ limit_per_hour: 3, remaining: 2 });
    const [rows] = await svc.sequelize.query(`SELECT workspace_id, operation, channel, classification, billable FROM usage_events WHERE id = $1`, { bind: [ok.body.receipt.usage_event_id] });
    expect(rows[0]).to.deep.equal({ workspace_id: 'ws_public_demo', operation: 'verify', channel: 'demo', classification: 'others', billable: false });

    const invalid = await api.post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'widget' } });
    expect(invalid.status).to.equal(400);
    expect(invalid.body.issues[0].path).to.equal('proposed_price');
    expect(invalid.headers.get('x-demo-budget-remaining')).to.equal('1');
    const notJson = await api.raw<Record<string, any>>('POST', '/api/public/price-router/verify', { rawBody: '{', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).to.equal(400);
    expect(notJson.body.code).to.equal('invalid_json');
    expect(notJson.headers.get('x-demo-budget-remaining')).to.equal('0');
    const over = await api.post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'widget' }, price: 1 });
    expect(over.status).to.equal(429);
    expect(over.body.retry_after).to.equal(Number(over.headers.get('retry-after')));
    expect(over.headers.get('x-demo-budget-remaining')).to.equal('0');
  });

  it('tells a caller who sent a key that the demo did not check it, pointing at the authenticated route; a keyless call gets no such field', async () => {
    const other = await startTestService();
    try {
      const sandbox = await registerSandbox(other, 'demo-with-key');
      const res = await client(other.url, { 'x-api-key': sandbox.key }).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'widget' }, proposed_price: '3' });
      expect(res.status, res.text).to.equal(200);
      expect(res.body.demo).to.equal(true);
      expect(res.body.credential_ignored).to.equal(
        'The demo verifies every call as the keyless demo tenant and did not check the credential sent; send it to POST /api/price-router/verify to verify as your workspace.',
      );
      const keyless = await client(other.url).post<Record<string, any>>('/api/public/price-router/verify', { context: { product_type: 'widget' }, proposed_price: '3' });
      expect(keyless.status).to.equal(200);
      expect(keyless.body).to.not.have.property('credential_ignored');
    } finally {
      await other.close();
    }
  });

  it('answers GET with 405 and Allow: POST', async () => {
    const res = await client(svc.url).get<Record<string, any>>('/api/public/price-router/verify');
    expect(res.status).to.equal(405);
    expect(res.headers.get('allow')).to.equal('POST');
  });
});
