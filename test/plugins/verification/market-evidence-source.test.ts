import { expect } from 'chai';
import type { Pool } from 'pg';
import { createLogger } from '../../../core/logger';
import { Metrics } from '../../../core/metrics';
import { TOKENS } from '../../../core/tokens';
import type { MarketEvidence } from '../../../engine';
import { MarketEvidenceSlot } from '../../../plugins/pricing/services/market-evidence';
import { NetworkMarketEvidence } from '../../../plugins/verification/services/market-evidence';
import type { Evidence, ObservationStore } from '../../../plugins/verification/services/observations';
import { ObservedProductTypes } from '../../../plugins/verification/services/product-types';
import { evaluateVerdict } from '../../../plugins/verification/services/verdict';
import type { Observation } from '../../../plugins/verification/services/verdict';
import { startTestService, testConfig } from '../../support/service';
import type { TestService } from '../../support/service';
import { client } from '../../support/http';
import { createKey, signUp } from '../../support/world';

const HOUR = 3_600_000;
const log = createLogger('silent');

/** The source as the service builds it, over a fixed set of rows. */
function sourceOver(observations: Observation[], now: number): NetworkMarketEvidence {
  const evidence: Evidence = { observations, older: 0 };
  const store = { forVerification: () => Promise.resolve(evidence) } as unknown as ObservationStore;
  const everything = { mayHave: () => true } as unknown as ObservedProductTypes;
  return new NetworkMarketEvidence(store, everything, testConfig(), () => now);
}

describe('verification: the network\'s observations as market evidence for compute', () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  const obs = (id: string, workspaceId: string, source: string, amount: string, hoursAgo: number): Observation => ({ id, workspaceId, source, amount, observedAt: now - hoursAgo * HOUR });

  it('summarises with verification\'s own statistic: its reference equals the verdict\'s on the same rows', async () => {
    const rows = [obs('1', 'ws_a', 'shelf', '4.00', 1), obs('2', 'ws_a', 'shelf', '4.40', 30), obs('3', 'ws_a', 'web', '5.10', 200), obs('4', 'ws_b', 'cafe', '4.60', 2), obs('5', 'ws_c', 'kiosk', '3.90', 900)];
    const market = (await sourceOver(rows, now).lookup('tea', 'USD')) as MarketEvidence;
    const t = testConfig().verification;
    const verdict = evaluateVerdict({ proposedPrice: '4.20', observations: rows, now, callerWorkspaceId: null, thresholds: { minEffectiveObservations: t.minEffectiveObservations, minSources: t.minSources, halfLifeDays: t.halfLifeDays, maxAgeDays: t.maxAgeDays, bandK: t.bandK, minRelativeHalfWidth: t.minRelativeHalfWidth } });
    expect(market.reference_price?.toFixed(2)).to.equal(verdict.reference?.price);
    expect(market).to.deep.include({ observations: 5, workspaces: 3 });
    expect(market.largest_source_share).to.equal(verdict.independence.largest_source_share);
  });

  it('one workspace repeating a quote cannot move the network reference compute positions on', async () => {
    const honest = [obs('1', 'ws_a', 'shelf', '18.00', 3), obs('2', 'ws_a', 'shelf', '20.00', 4), obs('3', 'ws_b', 'web', '21.00', 3), obs('4', 'ws_b', 'web', '23.00', 4), obs('5', 'ws_c', 'kiosk', '22.00', 3), obs('6', 'ws_c', 'kiosk', '25.00', 4)];
    const flood = Array.from({ length: 38 }, (_, i) => ({ ...obs(`x${i}`, 'ws_x', i % 2 ? 'feed-1' : 'feed-2', '100', 1), observedAt: now - HOUR + i * 1000 }));
    const market = (await sourceOver([...honest, ...flood], now).lookup('tea', 'USD')) as MarketEvidence;
    expect(market.reference_price).to.be.within(18, 25);
    expect(market.largest_source_share).to.be.at.most(0.5);
    // The 38 quotes of one amount from one workspace count once.
    expect(market).to.deep.include({ observations: 7, workspaces: 4 });
  });

  it('gives no source price, and says why, when the reference rests on one workspace (38 quotes near 100, or one of 100, against another workspace\'s six)', async () => {
    const alone = ['18.00', '20.00', '21.00', '23.00', '22.00', '25.00'].map((v, i) => obs(`a${i}`, 'ws_a', ['shelf', 'web', 'kiosk'][Math.floor(i / 2)] as string, v, 3 + i));
    const distinct = Array.from({ length: 38 }, (_, i) => ({ ...obs(`x${i}`, 'ws_x', i % 2 ? 'feed-1' : 'feed-2', (100 + (i + 1) / 100).toFixed(2), 1), observedAt: now - HOUR + i * 1000 }));
    const flooded = await sourceOver([...alone, ...distinct], now).lookup('tea', 'USD');
    expect(flooded).to.deep.include({ observations: 44, source_prices: [], workspaces: 2 });
    // Both hold here; the two groups are named first, as what separates them is the caller's to change.
    expect(flooded?.withheld).to.match(/^the quotes split into two groups around 21\.50 and 100\.195, and their reference 61\.845 lies in the gap/);
    // One workspace moving the reference with no gap: 20 to 23 against another's 24.
    const rests = await sourceOver([...['20.00', '21.00', '22.00', '23.00'].map((v, i) => obs(`r${i}`, 'ws_r', 'shelf', v, 2 + i)), obs('s', 'ws_s', 'web', '24.00', 2)], now).lookup('tea', 'USD');
    expect(rests).to.deep.include({ source_prices: [], workspaces: 2, withheld: 'the reference rests on one workspace: without the one that submitted 80% of the weight it would be 24.00, not 22.75' });
    expect(flooded).to.not.have.any.keys('reference_price', 'band', 'largest_source_share');
    expect((await sourceOver([...alone, obs('x', 'ws_x', 'feed', '100', 1)], now).lookup('tea', 'USD'))?.source_prices).to.deep.equal([]);
    // Two workspaces in equal measure, 99 to 101 against 19 to 21: their midpoint, 60, is no one's price.
    const split = [...['99', '100', '101'].map((v, i) => obs(`h${i}`, 'ws_h', 'shelf', v, 2)), ...['19', '20', '21'].map((v, i) => obs(`l${i}`, 'ws_l', 'web', v, 2))];
    expect((await sourceOver(split, now).lookup('tea', 'USD'))?.source_prices).to.deep.equal([]);
    // A second workspace that agrees leaves the evidence standing.
    const agreeing = await sourceOver([...alone, ...Array.from({ length: 12 }, (_, i) => obs(`b${i}`, 'ws_b', 'feed', (21 + i / 10).toFixed(2), 1 + i))], now).lookup('tea', 'USD');
    expect(agreeing?.reference_price).to.be.within(18, 25);
  });

  it('gives no source price, and says why, when the quotes split into two groups and their reference lies in the gap (9.90–10.20 against 19.80–20.40)', async () => {
    const groups = [
      ['ws_a', ['9.90', '10.00', '10.10', '10.20']],
      ['ws_b', ['9.95', '10.05', '10.15']],
      ['ws_c', ['19.80', '20.00', '20.20', '20.40']],
      ['ws_d', ['19.90', '20.10', '20.30']],
    ] as const;
    const rows = groups.flatMap(([w, amounts]) => amounts.map((a, i) => obs(`${w}${i}`, w, w, a, 1 + i)));
    const split = await sourceOver(rows, now).lookup('duo-pack', 'USD');
    expect(split).to.deep.include({ observations: 14, source_prices: [], workspaces: 4 });
    expect(split?.withheld).to.match(/^the quotes split into two groups around 10\.05 and 20\.10, and their reference 15\.075 lies in the gap \(a more specific product_type separates them\)$/);
    // One of the groups alone is evidence as before.
    const one = await sourceOver(rows.filter((r) => r.workspaceId === 'ws_a' || r.workspaceId === 'ws_b'), now).lookup('duo-pack', 'USD');
    expect(one?.reference_price).to.be.within(9.9, 10.2);
  });

  it('carries the verdict\'s band on the same rows exactly when a verdict would draw one (5 workspaces by default, not 4)', async () => {
    const t = testConfig().verification;
    const thresholds = { minEffectiveObservations: t.minEffectiveObservations, minSources: t.minSources, halfLifeDays: t.halfLifeDays, maxAgeDays: t.maxAgeDays, bandK: t.bandK, minRelativeHalfWidth: t.minRelativeHalfWidth };
    const rows = ['7.10', '7.40', '6.90', '8.20', '7.00'].map((a, i) => obs(`${i}`, `ws_${i}`, 'shelf', a, 2));
    const market = (await sourceOver(rows, now).lookup('soap', 'USD')) as MarketEvidence;
    const verdict = evaluateVerdict({ proposedPrice: '7.20', observations: rows, now, callerWorkspaceId: null, thresholds });
    expect(verdict.evidence.sufficient).to.equal(true);
    expect(market.band).to.deep.equal({ lower: Number(verdict.band?.lower), upper: Number(verdict.band?.upper) });
    const four = rows.slice(0, 4);
    expect(evaluateVerdict({ proposedPrice: '7.20', observations: four, now, callerWorkspaceId: null, thresholds }).evidence.sufficient).to.equal(false);
    const fewer = (await sourceOver(four, now).lookup('soap', 'USD')) as MarketEvidence;
    expect(fewer.reference_price).to.be.a('number');
    expect(fewer).to.not.have.property('band');
  });

  it('counts exact copies once as verification does, whatever the written scale (4.5 and 4.50)', async () => {
    const rows = [obs('1', 'ws_a', 'shelf', '4.50', 1), obs('2', 'ws_a', 'shelf', '4.5', 1), obs('3', 'ws_b', 'cafe', '4.70', 1)];
    const market = (await sourceOver(rows, now).lookup('tea', 'USD')) as MarketEvidence;
    expect(market.observations).to.equal(2);
    expect(market.reference_price).to.equal(4.6);
    expect(market.largest_source_share).to.equal(0.5);
  });
});

describe('pricing: the market-evidence slot never holds a compute up', () => {
  const context = { product_type: 'tea', currency: 'USD' };

  it('a lookup slower than ENGINE_MARKET_LOOKUP_TIMEOUT_MS prices without evidence, and a failing one too; each is counted by outcome', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const slot = new MarketEvidenceSlot({ enabled: true, timeoutMs: 30 }, log, metrics);
    slot.provide({ lookup: () => new Promise(() => undefined) });
    const started = Date.now();
    expect(await slot.forContext(context)).to.deep.equal({ evidence: null, outcome: 'timeout' });
    expect(Date.now() - started).to.be.below(1000);
    slot.provide({ lookup: () => Promise.reject(new Error('connection refused')) });
    expect(await slot.forContext(context)).to.deep.equal({ evidence: null, outcome: 'error' });
    const text = await metrics.registry.getSingleMetricAsString('pricing_market_evidence_lookups_total');
    expect(text).to.match(/outcome="timeout"} 1/);
    expect(text).to.match(/outcome="error"} 1/);
  });

  it('looks up only for a product_type without competitor_prices of the caller\'s own (null counts as not sent)', async () => {
    const slot = new MarketEvidenceSlot({ enabled: true, timeoutMs: 1000 }, log, new Metrics({ defaultMetrics: false }));
    const asked: string[] = [];
    slot.provide({ lookup: (p, c) => (asked.push(`${p}/${c}`), Promise.resolve(null)) });
    expect(await slot.forContext({ ...context, competitor_prices: null })).to.deep.equal({ evidence: null, outcome: 'none' });
    expect(await slot.forContext({ ...context, competitor_prices: [] })).to.equal(undefined);
    expect(await slot.forContext({ currency: 'USD' })).to.equal(undefined);
    expect(await slot.forContext({ product_type: 'x'.repeat(101) })).to.equal(undefined);
    expect(await slot.forContext({ product_type: ' tea ', currency: 'eur' })).to.deep.equal({ evidence: null, outcome: 'none' });
    expect(asked).to.deep.equal(['tea/USD', 'tea/EUR']);
  });
});

describe('verification: the in-memory list of observed product types', function () {
  this.timeout(30_000);
  let svc: TestService;
  let pool: Pool;
  before(async () => {
    svc = await startTestService();
    pool = svc.container.resolve<Pool>(TOKENS.PgPool);
    const api = client(svc.url, { 'x-api-key': (await createKey(svc, await signUp(svc, 'types'), { name: 't' })).key });
    const res = await api.post('/api/data/observations', { observations: ['ΚΑΦΕΣ', 'Oolong'].map((p) => ({ product_type: p, currency: 'USD', amount: '3.00', source: 's', observed_at: new Date().toISOString() })) });
    expect(res.status).to.equal(201);
  });
  after(() => svc.close());

  it('knows stored names case-insensitively, and asks the database for any name outside printable ASCII (its lower() may fold differently)', async () => {
    const types = new ObservedProductTypes(pool, { refreshMs: 60_000, max: 1000, maxAgeDays: 120 }, log, () => Date.now());
    expect(types.mayHave('never-seen', 'USD')).to.equal(true);
    await types.load();
    expect(types.mayHave('OOLONG', 'USD')).to.equal(true);
    expect(types.mayHave('oolong', 'EUR')).to.equal(false);
    expect(types.mayHave('never-seen', 'USD')).to.equal(false);
    for (const greek of ['ΚΑΦΕΣ', 'καφεσ', 'καφες']) expect(types.mayHave(greek, 'USD'), greek).to.equal(true);
  });

  it('runs one load at a time, and a write made during it is kept', async () => {
    const types = new ObservedProductTypes(pool, { refreshMs: 60_000, max: 1000, maxAgeDays: 120 }, log, () => Date.now());
    const first = types.load();
    expect(types.load()).to.equal(first);
    types.add('brand-new', 'USD');
    await first;
    expect(types.mayHave('brand-new', 'USD')).to.equal(true);
  });

  it('past its maximum it keeps no list and every name may have observations', async () => {
    const types = new ObservedProductTypes(pool, { refreshMs: 60_000, max: 1, maxAgeDays: 120 }, log, () => Date.now());
    await types.load();
    expect(types.mayHave('never-seen', 'USD')).to.equal(true);
  });
});
