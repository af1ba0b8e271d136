import { expect } from 'chai';
import { ManualClock } from '../../core/clock';
import { LatencyStats } from '../../engine/stats/latency';
import { fixture, harness } from './harness';
import type { Harness } from './harness';

describe('engine: rolling latency statistics', function () {
  this.timeout(20_000);
  let h: Harness;
  beforeEach(async () => {
    h = await harness({ functions: [fixture('test-ok')], engine: { latencyWindowMs: 10_000, latencyMaxSamples: 8, latencyColdBelow: 3 } });
  });
  afterEach(() => h.close());

  const lat = () => h.parts.latency;

  it('a function never timed has no data and is cold', () => {
    expect(lat().snapshot('fn_test_ok')).to.deep.equal({ samples: 0, p50_ms: null, p95_ms: null, ewma_ms: null, window_ms: 10_000, cold: true });
    expect(lat().average('fn_test_ok')).to.equal(null);
  });

  it('p50 and p95 over the samples in the window; warm from coldBelow samples on', () => {
    lat().record('f', 10);
    lat().record('f', 30);
    expect(lat().snapshot('f')).to.include({ samples: 2, cold: true });
    lat().record('f', 20);
    lat().record('f', 40);
    expect(lat().snapshot('f')).to.include({ samples: 4, p50_ms: 25, p95_ms: 38.5, cold: false });
  });

  it('keeps at most maxSamples, dropping the oldest first', () => {
    for (let i = 1; i <= 10; i++) lat().record('f', i * 100);
    // 100 and 200 dropped: 300..1000 remain.
    expect(lat().snapshot('f')).to.include({ samples: 8, p50_ms: 650 });
  });

  it('rolls: samples older than the window stop counting, and the function turns cold again', () => {
    lat().record('f', 500);
    lat().record('f', 500);
    lat().record('f', 500);
    h.clock.advance(6_000);
    lat().record('f', 10);
    lat().record('f', 10);
    lat().record('f', 10);
    expect(lat().snapshot('f')).to.include({ samples: 6, p50_ms: 255 });
    h.clock.advance(4_001);
    expect(lat().snapshot('f')).to.include({ samples: 3, p50_ms: 10 });
    h.clock.advance(6_000);
    expect(lat().snapshot('f')).to.include({ samples: 0, p50_ms: null, cold: true });
  });

  it('drops the series of functions not run within the window as others are run, which then read as never timed; a function still run keeps its samples', () => {
    for (let i = 0; i < 20; i++) lat().record(`idle-${i}`, 50);
    lat().recordDeclined('declined');
    lat().record('busy', 10);
    expect(lat().functionsKept).to.equal(22);
    h.clock.advance(6_000);
    lat().record('busy', 10);
    h.clock.advance(4_500);
    // idle-* and declined are out of the window now; busy's second sample is not. Each record drops up to four.
    for (let i = 0; i < 6; i++) lat().record('busy', 10);
    expect(lat().functionsKept).to.equal(1);
    expect(lat().snapshot('idle-0')).to.deep.equal({ samples: 0, p50_ms: null, p95_ms: null, ewma_ms: null, window_ms: 10_000, cold: true });
    expect(lat().snapshot('busy')).to.include({ samples: 7, p50_ms: 10 });
    // A function run again after its series went starts afresh.
    lat().record('idle-3', 70);
    expect(lat().snapshot('idle-3')).to.include({ samples: 1, p50_ms: 70, cold: true });
  });

  it('the catalogue average is the mean over the same window', () => {
    lat().record('f', 900);
    h.clock.advance(6_000);
    lat().record('f', 100);
    expect(lat().average('f')).to.equal(500);
    h.clock.advance(4_001);
    expect(lat().average('f')).to.equal(100);
    h.clock.advance(10_000);
    // Timed before, though nothing is left in the window: the mean since the instance started, never "no data".
    expect(lat().average('f'), 'every answered call since start').to.equal(500);
    expect(lat().average('never-timed')).to.equal(null);
  });

  it('the catalogue average reads answered calls only: a failure, recorded at its timeout for ranking, is no latency of an answer', () => {
    lat().record('g', 2000, true, 'ws_a');
    expect(lat().average('g'), 'never answered').to.equal(null);
    lat().record('g', 4);
    expect(lat().average('g')).to.equal(4);
    expect(lat().snapshot('g')).to.include({ samples: 2, p50_ms: 1002 });
  });

  it('the EWMA covers only the samples in the window: older ones no longer weigh in', () => {
    const clock = new ManualClock();
    const stats = new LatencyStats(clock, { windowMs: 300_000, maxSamples: 256, coldBelow: 3, ewmaAlpha: 0.3 });
    for (let i = 0; i < 50; i++) stats.record('f', 1000);
    clock.advance(301_000);
    for (let i = 0; i < 3; i++) stats.record('f', 10);
    expect(stats.snapshot('f')).to.include({ samples: 3, p50_ms: 10 });
    expect(stats.snapshot('f').ewma_ms, 'EWMA of samples that left the window').to.equal(10);
  });

  it('the EWMA covers only the samples kept under maxSamples, oldest first with α 0.3', () => {
    for (let i = 1; i <= 10; i++) lat().record('f', i * 100);
    // 300..1000 remain: seeded with 300, each next sample weighs 0.3.
    expect(lat().snapshot('f').ewma_ms).to.equal(785.883);
    // 300 leaves as 100 arrives: 400..1000 then 100.
    lat().record('f', 100);
    expect(lat().snapshot('f').ewma_ms).to.equal(585.883);
  });

  it('a real call is recorded as one sample of the function', async () => {
    await h.price({ pin: { name: 'test-ok' } });
    const s = lat().snapshot('fn_test_ok');
    expect(s.samples).to.equal(1);
    expect(s.p50_ms).to.be.a('number').and.be.above(0);
  });
});
