import { expect } from 'chai';
import { pct } from '../../../plugins/verification/services/verdict';
import { evaluateVerdict } from '../../../plugins/verification';
import type { Observation, VerdictInput, VerdictThresholds } from '../../../plugins/verification';

const NOW = Date.parse('2026-03-01T00:00:00Z');
const DAY = 86_400_000;
const THRESHOLDS: VerdictThresholds = { minEffectiveObservations: 5, minSources: 2, halfLifeDays: 30, maxAgeDays: 120, bandK: 3, minRelativeHalfWidth: 0.05 };

let seq = 0;
function obs(workspaceId: string, source: string, amount: string, daysAgo = 1): Observation {
  return { id: `obs_${seq++}`, workspaceId, source, amount, observedAt: NOW - daysAgo * DAY };
}

/** Five independent sources around 10 (each workspace counts once: five is the minimum), two observations each, a day old. */
const market = (): Observation[] => [
  obs('ws_a', 'shelf-scan', '9.80'),
  obs('ws_a', 'shelf-scan', '10.20'),
  obs('ws_b', 'competitor-site', '10.00'),
  obs('ws_b', 'competitor-site', '10.10'),
  obs('ws_c', 'marketplace', '9.90'),
  obs('ws_c', 'marketplace', '10.30'),
  obs('ws_d', 'catalogue', '9.95'),
  obs('ws_d', 'catalogue', '10.05'),
  obs('ws_e', 'flyer', '10.00'),
  obs('ws_e', 'flyer', '10.20'),
];

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

function verdict(proposedPrice: string, observations: Observation[], extra: Partial<VerdictInput> = {}) {
  return evaluateVerdict({ proposedPrice, observations, now: NOW, callerWorkspaceId: 'ws_caller', thresholds: THRESHOLDS, ...extra });
}

describe('verification verdict (pure)', () => {
  describe('extreme magnitudes', () => {
    // Six observations of one amount, one from each of six workspaces (one workspace repeating an amount counts once).
    const three = (amount: string) => ['ws_a', 'ws_b', 'ws_c', 'ws_d', 'ws_e', 'ws_f'].map((w, i) => obs(w, 'src', amount, 1 + i / 6));

    it('judges a tiny price equal to every observation reasonable, with the reference as observed (0.0000000000014, 1e-18)', () => {
      for (const amount of ['0.0000000000014', '0.000000000000000001']) {
        const v = verdict(amount, three(amount));
        expect(v.verdict, amount).to.equal('reasonable');
        expect(v.reference?.price).to.equal(amount);
      }
    });

    it('reports a lower bound below the smallest price (10^-18) as open, not as a closed "0.00"', () => {
      // Three quotes each (1, 2 and 3 × 10^-18): one group around 2 × 10^-18, not two at 1 and 3 with the reference between them.
      const tiny = ['ws_a', 'ws_b', 'ws_c', 'ws_d', 'ws_e'].flatMap((w) => [obs(w, 'src', '0.000000000000000001', 1), obs(w, 'src', '0.000000000000000002', 1.5), obs(w, 'src', '0.000000000000000003', 2)]);
      const v = verdict('0.000000000000000001', tiny);
      expect(v.verdict).to.equal('reasonable');
      expect(v.band).to.include({ lower: null, lower_open: true, upper_open: false, method: 'log_median_k_mad' });
      expect(v.band.upper).to.match(/^0\.0{16}\d\d$/);
      expect(v.reasons[0]).to.equal(`the proposed price lies within the band (open below, ${v.band.upper ?? ''}] around the reference ${v.reference?.price ?? ''}`);
      // The constraints cut it as before: a floor closes it.
      const floored = verdict('0.000000000000000002', tiny, { floor: { value: '0.000000000000000003', from: ['unit_cost'] } });
      expect(floored.band).to.include({ lower: '0.000000000000000003', lower_open: false, method: 'log_median_k_mad_within_constraints' });
    });

    it('does not cap the band below the largest price: near 1e18 a price inside the band is reasonable, and bounds print no invented digits', () => {
      const v = verdict('999500000000000000', three('990000000000000000'));
      expect(v.verdict).to.equal('reasonable');
      expect(v.band.upper).to.equal('999999999999999999.999999999999999999');
      const w = verdict('900000000000000000', three('900000000000000000'));
      expect(w.band.lower).to.match(/^\d{15}000\.00$/);
    });
  });

  describe('one submitter and circular evidence', () => {
    it('one workspace posting under several labels is disclosed as not independent, with the independence factor halved', () => {
      const oneWorkspace = ['s1', 's2', 's3'].flatMap((label, i) => [obs('ws_a', label, (9.9 + i / 100).toFixed(2)), obs('ws_a', label, (10.1 + i / 100).toFixed(2))]);
      const v = verdict('10.00', oneWorkspace);
      expect(v.independence.independent).to.equal(false);
      expect(v.independence.reasons).to.include('all 3 sources come from one workspace');
      // One workspace is one source: no two-sided verdict unless VERIFY_MIN_SOURCES is 1, and then at half the independence.
      expect(v.verdict).to.equal('unknown');
      expect(verdict('10.00', oneWorkspace, { thresholds: { ...THRESHOLDS, minSources: 1, minEffectiveObservations: 1 } }).confidence_factors.independence).to.equal(0.5);
      expect(verdict('10.00', market()).independence.independent).to.equal(true);
    });

    it('when every usable observation is the caller\'s own echo, the reason says so (not "no stored observation matches")', () => {
      const own = Array.from({ length: 5 }, () => obs('ws_caller', 'mine', '10.00'));
      const v = verdict('10.00', own);
      expect(v.verdict).to.equal('unknown');
      expect(v.reasons[0]).to.match(/your own workspace's echo .* excluded as circular evidence/);
    });
  });

  describe('one workspace cannot outweigh the others', () => {
    /** Ten honest quotes at 18–25 from five workspaces, a day old. */
    const honest = (): Observation[] => [
      obs('ws_a', 'shelf', '18.00'),
      obs('ws_a', 'shelf', '20.00'),
      obs('ws_b', 'web', '21.00'),
      obs('ws_b', 'web', '23.00'),
      obs('ws_c', 'kiosk', '22.00'),
      obs('ws_c', 'kiosk', '25.00'),
      obs('ws_d', 'stall', '19.00'),
      obs('ws_d', 'stall', '21.00'),
      obs('ws_e', 'app', '20.00'),
      obs('ws_e', 'app', '24.00'),
    ];
    /** 38 copies of 100 from one workspace, a second apart (so not exact copies), under two labels. */
    const flood = (): Observation[] => Array.from({ length: 38 }, (_, i) => ({ ...obs('ws_x', i % 2 ? 'feed-1' : 'feed-2', '100'), observedAt: NOW - DAY + i * 1000 }));

    it('38 repeated quotes of one amount from one workspace count as one observation: the reference stays among the honest quotes and 100 stays high', () => {
      const v = verdict('22', [...honest(), ...flood()], { callerWorkspaceId: null });
      expect(Number(v.reference?.price)).to.be.within(18, 25);
      expect(v.verdict).to.equal('reasonable');
      expect(verdict('100', [...honest(), ...flood()], { callerWorkspaceId: null }).verdict).to.equal('high');
      // Whatever the label or time, one workspace's quotes of one amount are one observation: 10 + 1.
      expect(v.independence.duplicates_removed).to.equal(37);
      expect(v.reference?.observations).to.equal(11);
      // Six workspaces, each counting once with its weight: five of two quotes, the flood's one → 11² / (5·2² + 1²) = 5.76.
      expect(v.reference?.effective_n).to.equal(5.76);
      expect(v.independence.largest_source_share).to.be.at.most(0.5);
      expect(v.independence.reasons.join(' ')).not.to.match(/one workspace submitted/);
    });

    /** Six honest quotes at 18–25 from one workspace under three labels, a day old. */
    const alone = (): Observation[] => [obs('ws_a', 'shelf', '18.00'), obs('ws_a', 'shelf', '20.00'), obs('ws_a', 'web', '21.00'), obs('ws_a', 'web', '23.00'), obs('ws_a', 'kiosk', '22.00'), obs('ws_a', 'kiosk', '25.00')];

    it('against one other workspace, 38 copies of 100 make no price reasonable: the midpoint reference rests on one workspace', () => {
      for (const price of ['22', '61', '100']) {
        const v = verdict(price, [...alone(), ...flood()], { callerWorkspaceId: null });
        expect(v.verdict, price).to.equal('unknown');
        expect(v.evidence.sufficient, price).to.equal(false);
        expect(v.band.method, price).to.equal('none');
        expect(v.reference?.price, price).to.equal('61.75');
        expect(v.reasons, price).to.include('the reference rests on one workspace: without the one that submitted 86% of the weight it would be 100.00, not 61.75');
      }
    });

    it('one quote of 100 against another workspace\'s six is unknown, not a midpoint reasonable', () => {
      const v = verdict('61', [...alone(), obs('ws_x', 'feed', '100')], { callerWorkspaceId: null });
      expect(v.verdict).to.equal('unknown');
      expect(v.confidence).to.equal(0);
      expect(v.reasons).to.include('the reference rests on one workspace: without the one that submitted 86% of the weight it would be 100.00, not 61.75');
      // A floor still decides one-sidedly, as on any insufficient evidence.
      const floored = verdict('15', [...alone(), obs('ws_x', 'feed', '100')], { callerWorkspaceId: null, floor: { value: '16', from: ['unit_cost'] } });
      expect(floored).to.include({ verdict: 'low', basis: 'floor' });
      expect(floored.band.method).to.equal('floor_only');
    });

    it('38 distinct quotes near 100 from one workspace against another\'s six: unknown, saying the reference rests on that workspace', () => {
      const distinct = Array.from({ length: 38 }, (_, i) => ({ ...obs('ws_x', i % 2 ? 'feed-1' : 'feed-2', (100 + (i + 1) / 100).toFixed(2)), observedAt: NOW - DAY + i * 1000 }));
      const v = verdict('61', [...alone(), ...distinct], { callerWorkspaceId: null });
      expect(v.verdict).to.equal('unknown');
      expect(v.evidence.sufficient).to.equal(false);
      // 44 distinct quotes, but two submitters: the effective n counts workspaces, once each.
      expect(v.reference?.effective_n).to.equal(2);
      expect(v.independence.workspaces).to.equal(2);
      const reason = v.reasons.find((r) => r.startsWith('the reference rests on one workspace'));
      expect(reason).to.equal(`the reference rests on one workspace: without the one that submitted 86% of the weight it would be 22.00, not ${v.reference?.price ?? ''}`);
      expect(Number(v.reference?.price)).to.be.greaterThan(60);
      // The caller's own flood is named as such.
      const own = verdict('61', [...alone(), ...distinct], { callerWorkspaceId: 'ws_x' });
      expect(own.reasons.join(' ')).to.match(/without the one \(your own\) that submitted 86% of the weight/);
    });

    it('two workspaces that disagree in equal measure make no price reasonable: the midpoint nobody quoted rests on either of them', () => {
      const high = ['99', '100', '101'].map((v) => obs('ws_a', 'shelf', v));
      const low = ['19', '20', '21'].map((v) => obs('ws_b', 'web', v));
      for (const price of ['2', '60', '1900']) {
        const v = verdict(price, [...high, ...low], { callerWorkspaceId: null });
        expect(v.verdict, price).to.equal('unknown');
        expect(v.evidence.sufficient, price).to.equal(false);
        expect(v.reference?.price, price).to.equal('60.00');
        expect(v.reasons, price).to.include('the reference rests on one workspace: without the one that submitted 50% of the weight it would be 20.00, not 60.00');
      }
      // One of them a second fresher tilts the raw weight by 10⁻⁸: the same answer, without the other.
      const fresher = low.map((o) => ({ ...o, observedAt: o.observedAt + 1000 }));
      const tilted = verdict('60', [...high, ...fresher], { callerWorkspaceId: null });
      expect(tilted.verdict).to.equal('unknown');
      expect(tilted.reasons).to.include('the reference rests on one workspace: without the one that submitted 50% of the weight it would be 100.00, not 60.00');
    });

    it('two workspaces that agree keep a two-sided verdict, however unequal their weights (with a minimum of 2 effective submitters)', () => {
      const agreeing = Array.from({ length: 12 }, (_, i) => obs('ws_b', 'feed', (21 + i / 10).toFixed(2)));
      const v = verdict('22', [...alone(), ...agreeing], { callerWorkspaceId: null, thresholds: { ...THRESHOLDS, minEffectiveObservations: 2 } });
      expect(v.verdict).to.equal('reasonable');
      expect(v.reasons.join(' ')).not.to.match(/rests on one workspace/);
    });

    it('two workspaces quoting a second apart are not called "over half": time decay tilting a half by less than a tenth of a percent is no dominance', () => {
      const second = 1 / 86_400;
      const v = verdict('10.5', [obs('ws_a', 'x', '10', 1), obs('ws_b', 'y', '11', 1 + 0.3 * second)], { callerWorkspaceId: null });
      expect(v.independence.reasons.join(' ')).not.to.match(/over half/);
      // A share that is over half to a tenth of a percent still is, and reads so.
      const tilted = verdict('10.5', [obs('ws_a', 'x', '10', 1), obs('ws_b', 'y', '11', 1.2)], { callerWorkspaceId: null });
      expect(tilted.independence.reasons.join(' ')).to.match(/submitted 50\.\d+% of the weight .* over half/);
    });

    it('a source with exactly half the weight of two workspaces equalised by the cap is not called "over half"', () => {
      const big = Array.from({ length: 10 }, (_, i) => obs('ws_a', 'shelf', (20 + i / 10).toFixed(2), 1 + i / 10));
      const small = Array.from({ length: 7 }, (_, i) => obs('ws_b', 'web', (20.3 + i / 10).toFixed(2), 1 + i / 7));
      const v = verdict('20.5', [...big, ...small], { callerWorkspaceId: null, thresholds: { ...THRESHOLDS, minEffectiveObservations: 2 } });
      expect(v.independence.largest_source_share).to.equal(0.5);
      expect(v.independence.reasons.join(' ')).not.to.match(/one source .* over half/);
      expect(v.verdict).to.equal('reasonable');
    });

    it('counts a submitter\'s many distinct quotes once: two workspaces of 30 quotes each are 2 independent submitters, not 60, and give no two-sided verdict', () => {
      // Two workspaces, 30 distinct quotes each at 49.07–51.10 and 49.10–51.13, an hour apart.
      const duo = ['ws_a', 'ws_b'].flatMap((w, j) => Array.from({ length: 30 }, (_, i) => ({ ...obs(w, `${w}-feed`, (49.07 + j * 0.03 + i * 0.07).toFixed(2)), observedAt: NOW - (i + 1) * 3_600_000 })));
      const v = verdict('56', duo, { callerWorkspaceId: null });
      expect(v.reference?.observations).to.equal(60);
      expect(v.reference?.effective_n).to.equal(2);
      expect(v.independence).to.include({ workspaces: 2 });
      expect(v).to.include({ verdict: 'unknown', confidence: 0 });
      expect(v.evidence.sufficient).to.equal(false);
      expect(v.reasons).to.include('effective number of independent submitters 2 is below the minimum 5: a workspace counts once, however many quotes it posts');
      // Where a deployment allows two, the amount factor says how little two submitters are: 2 / (2 + 5).
      const allowed = verdict('56', duo, { callerWorkspaceId: null, thresholds: { ...THRESHOLDS, minEffectiveObservations: 2 } });
      expect(allowed.verdict).to.equal('high');
      expect(allowed.confidence_factors.amount).to.equal(0.286);
      expect(allowed.confidence).to.be.below(0.3);
    });

    it('keeps honest data of workspaces of like size as it was: no cap applies, and each workspace counts once', () => {
      const v = verdict('22', honest(), { callerWorkspaceId: null });
      expect(v.reference?.effective_n).to.equal(5);
      expect(v.reference?.total_weight).to.equal(round3(10 * 0.5 ** (1 / 30)));
      expect(v.independence).to.include({ independent: true, workspaces: 5 });
    });

    it('one workspace under several labels is one source for VERIFY_MIN_SOURCES: no two-sided verdict on it', () => {
      const one = ['s1', 's2'].flatMap((label, j) => [1, 2, 3].map((d) => obs('ws_a', label, (10 + j * 0.03 + d * 0.01).toFixed(2), d)));
      const v = verdict('10.00', one);
      expect(v.verdict).to.equal('unknown');
      expect(v.evidence.sufficient).to.equal(false);
      expect(v.reference?.sources).to.equal(2);
      expect(v.independence.workspaces).to.equal(1);
      expect(v.reasons).to.include('1 distinct source(s), below the minimum 2: sources are counted by submitting workspace (with its test workspace and the agent workspaces claimed into it), one however many labels it uses');
      // An accepted outcome counts as its workspace's: with another workspace's observations, two sources.
      const withOther = verdict('10.00', [...one, ...[1, 2, 3].map((d) => obs('ws_b', 'accepted:cost-plus', (10.09 + d * 0.01).toFixed(2), d))], { thresholds: { ...THRESHOLDS, minEffectiveObservations: 2 } });
      expect(withOther.independence.workspaces).to.equal(2);
      expect(withOther.verdict).to.equal('reasonable');
    });
  });

  describe('two-sided verdicts from observations', () => {
    it('calls a price inside the band reasonable, with a real reference and stated bounds', () => {
      const v = verdict('10.05', market());
      expect(v.verdict).to.equal('reasonable');
      expect(v.basis).to.equal('observations');
      // Per-source medians 10.00, 10.00, 10.05, 10.10, 10.10 with equal weights: the reference is 10.05.
      expect(v.reference?.price).to.equal('10.05');
      expect(v.reference).to.include({ statistic: 'time_weighted_median_of_source_medians', observations: 10, sources: 5, half_life_days: 30 });
      // Ten quotes from five workspaces: five independent submitters.
      expect(v.reference?.effective_n).to.equal(5);
      expect(v.reference?.source_labels.map((s) => s.label).sort()).to.deep.equal(['catalogue', 'competitor-site', 'flyer', 'marketplace', 'shelf-scan']);
      expect(v.reference?.newest_age_days).to.equal(1);
      expect(v.reference?.oldest_age_days).to.equal(1);
      expect(v.reference?.median_age_days).to.equal(1);
      expect(v.band).to.include({ lower_open: false, upper_open: false, method: 'log_median_k_mad' });
      expect(Number(v.band.lower)).to.be.lessThan(10.05);
      expect(Number(v.band.upper)).to.be.greaterThan(10.05);
      expect(v.independence.independent).to.equal(true);
      expect(v.independence.reasons).to.deep.equal([]);
      expect(v.confidence).to.be.greaterThan(0).and.at.most(1);
      expect(v.confidence_factors).to.have.keys('amount', 'independence', 'agreement', 'freshness', 'distance');
      expect(v.thresholds).to.deep.equal({ min_effective_observations: 5, min_sources: 2, half_life_days: 30, max_age_days: 120, band_k: 3, min_relative_half_width: 0.05 });
    });

    it('calls a price above the band high and one below it low', () => {
      const high = verdict('15', market());
      expect(high.verdict).to.equal('high');
      expect(high.reasons[0]).to.match(/above the band's upper bound/);
      const low = verdict('5', market());
      expect(low.verdict).to.equal('low');
      expect(low.reasons[0]).to.match(/below the band's lower bound/);
      expect(high.band).to.deep.equal(low.band);
    });

    it('keeps a minimum relative half-width when every reference is identical (MAD = 0)', () => {
      const same = ['a', 'b', 'c', 'd', 'e'].map((s) => obs(`ws_${s}`, s, '10.00'));
      const v = verdict('10.40', same);
      expect(v.verdict).to.equal('reasonable');
      expect(v.band.lower).to.equal('9.52381');
      expect(v.band.upper).to.equal('10.50');
      expect(v.band.scale).to.include({ estimator: 'none', min_half_width_applied: true });
      expect(verdict('10.60', same).verdict).to.equal('high');
      expect(verdict('9.50', same).verdict).to.equal('low');
    });

    it('lets a stated floor decide first: below unit cost is low even inside the band', () => {
      const v = verdict('10.00', market(), { floor: { value: '10.50', from: ['unit_cost'] } });
      expect(v.verdict).to.equal('low');
      expect(v.basis).to.equal('floor');
      expect(v.reasons[0]).to.match(/below the floor 10.50 \(unit_cost\)/);
    });

    it('the band shown with a floor or ceiling verdict is cut to the constraints, so it never contains the price judged', () => {
      const low = verdict('10.00', market(), { floor: { value: '10.05', from: ['unit_cost'] } });
      expect(low.band).to.include({ lower: '10.05', method: 'log_median_k_mad_within_constraints' });
      const high = verdict('10.10', market(), { ceiling: { value: '10.02', from: ['max_price'] } });
      expect(high.verdict).to.equal('high');
      expect(high.band).to.include({ upper: '10.02', method: 'log_median_k_mad_within_constraints' });
      // A floor above the whole band: the constraints alone are the band.
      const above = verdict('20.00', market(), { floor: { value: '30', from: ['unit_cost'] } });
      expect(above.band).to.include({ lower: '30.00', upper_open: true, method: 'floor_only' });
      // A floor below the whole band cuts nothing: the band is the market's, though the floor decided the verdict.
      const under = verdict('4.00', market(), { floor: { value: '5', from: ['unit_cost'] } });
      expect(under).to.include({ verdict: 'low', basis: 'floor' });
      expect(under.band.method).to.equal('log_median_k_mad');
    });

    it('a floor or ceiling inside the band cuts the band the price is judged against, when the market decides too', () => {
      const plain = verdict('10.20', market());
      const floored = verdict('10.20', market(), { floor: { value: '10.05', from: ['unit_cost'] } });
      expect(floored).to.include({ verdict: 'reasonable', basis: 'observations' });
      expect(floored.band).to.include({ lower: '10.05', upper: plain.band.upper, method: 'log_median_k_mad_within_constraints' });
      const capped = verdict('10.00', market(), { ceiling: { value: '10.30', from: ['max_price'] } });
      expect(capped.band).to.include({ lower: plain.band.lower, upper: '10.30', method: 'log_median_k_mad_within_constraints' });
      // The distance factor is measured to the bound of the cut band nearest the price: on the floor, the least.
      const onFloor = verdict('10.05', market(), { floor: { value: '10.05', from: ['unit_cost'] } });
      expect(onFloor.confidence_factors).to.include({ distance: 0.5 });
    });

    it('a floor above the whole band leaves the market to judge, and says that no price the floor allows is inside it', () => {
      const v = verdict('31', market(), { floor: { value: '30', from: ['unit_cost'] } });
      expect(v).to.include({ verdict: 'high', basis: 'observations' });
      expect(v.band.method).to.equal('log_median_k_mad');
      expect(v.reasons[0]).to.match(/^the floor 30\.00 \(unit_cost\) is above the market's whole band \[\d+\.\d+, \d+\.\d+\]: no price it allows is inside, so the price is judged against the market as it is$/);
      const under = verdict('5', market(), { ceiling: { value: '6', from: ['max_price'] } });
      expect(under).to.include({ verdict: 'low', basis: 'observations' });
      expect(under.reasons[0]).to.match(/^the ceiling 6\.00 \(max_price\) is below the market's whole band/);
    });
  });

  describe('time decay', () => {
    // Old: three sources at 10, 90 days old (three half-lives). New: two sources at 20, today.
    const mixed = (): Observation[] => [
      ...['a', 'b', 'c'].flatMap((s) => [obs(`ws_${s}`, `old-${s}`, '9.90', 90), obs(`ws_${s}`, `old-${s}`, '10.10', 90)]),
      obs('ws_d', 'new-d', '20.00', 0),
      obs('ws_e', 'new-e', '20.00', 0),
    ];

    it('moves the reference towards recent observations', () => {
      const decayed = verdict('20', mixed());
      const flat = verdict('20', mixed(), { thresholds: { ...THRESHOLDS, halfLifeDays: 1e9 } });
      expect(flat.reference?.price).to.equal('10.00');
      expect(decayed.reference?.price).to.equal('20.00');
      expect(decayed.reference?.newest_age_days).to.equal(0);
      expect(decayed.reference?.oldest_age_days).to.equal(90);
      expect(decayed.reference?.total_weight).to.equal(2.75);
    });

    it('counts evidence with Kish\'s effective n over the workspaces, not the raw count', () => {
      const v = verdict('20', mixed());
      // workspace weights: three of 2·0.125 and two of 1 → (2.75)² / (3·0.0625 + 2) = 3.46
      expect(v.reference?.observations).to.equal(8);
      expect(v.reference?.effective_n).to.equal(3.46);
      expect(v.verdict).to.equal('unknown');
      expect(v.reasons.join(' ')).to.match(/effective number of independent submitters 3.46 is below the minimum 5: a workspace counts once, however many quotes it posts/);
    });
  });

  describe('unknown', () => {
    it('when the quotes split into two groups and the reference lies in the gap between them: no price is reasonable, and the reason names the groups', () => {
      // Three workspaces quote 9.90–10.20, three others 19.80–20.40, a few hours old: the median of source medians falls near 15, where nobody quotes.
      const low = ['ws_a', 'ws_b', 'ws_c'].flatMap((w, j) => ['9.90', '10.05', '10.20'].map((a, i) => ({ ...obs(w, `${w}-src`, (Number(a) - j * 0.01).toFixed(2)), observedAt: NOW - (i + 1) * 3_600_000 })));
      const high = ['ws_d', 'ws_e', 'ws_f'].flatMap((w, j) => ['19.80', '20.10', '20.40'].map((a, i) => ({ ...obs(w, `${w}-src`, (Number(a) + j * 0.01).toFixed(2)), observedAt: NOW - (i + 1) * 3_600_000 })));
      for (const price of ['3.50', '15', '60.00']) {
        const v = verdict(price, [...low, ...high], { callerWorkspaceId: null });
        expect(v, price).to.include({ verdict: 'unknown', confidence: 0, basis: 'none' });
        expect(v.evidence.sufficient, price).to.equal(false);
        // Everything else suffices: six independent submitters, none dominant.
        expect(v.reference?.effective_n, price).to.equal(6);
        expect(v.band.method, price).to.equal('none');
        expect(v.reasons, price).to.include(`quotes split into two groups around 10.04 and 20.11: the reference ${v.reference?.price ?? ''} lies in the gap between them, with 0% of the weight within 19% of it`);
        expect(v.hint, price).to.match(/^The quotes fall into two separate price groups \(around 10\.04 and 20\.11\)/);
      }
      expect(Number(verdict('15', [...low, ...high]).reference?.price)).to.be.within(14, 16);
      // One group alone is judged as before.
      expect(verdict('10.05', [...low, ...high.slice(0, 0)], { thresholds: { ...THRESHOLDS, minEffectiveObservations: 3 } }).verdict).to.equal('reasonable');
    });

    it('does not call a wide single group split: ten workspaces spread evenly from 10 to 20 keep a two-sided verdict', () => {
      const wide = Array.from({ length: 10 }, (_, i) => obs(`ws_${i}`, `s${i}`, (10 + (i * 10) / 9).toFixed(2)));
      const v = verdict('15', wide, { callerWorkspaceId: null });
      expect(v.verdict).to.equal('reasonable');
      expect(v.reasons.join(' ')).not.to.match(/split/);
    });

    it('on thin evidence: two observations cannot support a judgement', () => {
      const v = verdict('10', [obs('ws_a', 'a', '10.00'), obs('ws_b', 'b', '10.50')]);
      expect(v.verdict).to.equal('unknown');
      expect(v.confidence).to.equal(0);
      expect(v.evidence.sufficient).to.equal(false);
      expect(v.reference?.price).to.equal('10.25');
      expect(v.band).to.deep.equal({ lower: null, upper: null, lower_open: true, upper_open: true, method: 'none' });
      expect(v.reasons.join(' ')).to.match(/below the minimum 5/);
    });

    it('on old evidence: observations past the max age are ignored', () => {
      const old = market().map((o) => ({ ...o, observedAt: NOW - 200 * DAY }));
      const v = verdict('10', old);
      expect(v.verdict).to.equal('unknown');
      expect(v.reference).to.equal(null);
      expect(v.evidence).to.include({ matched: 10, used: 0, ignored_older_than_max_age: 10, sufficient: false });
      expect(v.reasons[0]).to.match(/all 10 matching observation\(s\) are older than 120 days/);
    });

    it('with no observations and no floor or ceiling', () => {
      const v = verdict('10', []);
      expect(v.verdict).to.equal('unknown');
      expect(v.reference).to.equal(null);
      expect(v.reasons[0]).to.match(/no stored observation matches/);
      expect(v.independence.independent).to.equal(false);
    });

    it('when the floor is above the ceiling', () => {
      const v = verdict('10', market(), { floor: { value: '12', from: ['min_price'] }, ceiling: { value: '11', from: ['max_price'] } });
      expect(v.verdict).to.equal('unknown');
      expect(v.band.method).to.equal('conflicting_constraints');
    });
  });

  describe('one-sided bands', () => {
    it('floor only: low below it, otherwise unknown with the band [floor, open)', () => {
      const floor = { value: '5.00', from: ['unit_cost'] };
      const low = verdict('4', [], { floor });
      expect(low.verdict).to.equal('low');
      expect(low.basis).to.equal('floor');
      expect(low.band).to.deep.equal({ lower: '5.00', upper: null, lower_open: false, upper_open: true, method: 'floor_only' });
      expect(low.confidence).to.be.greaterThan(0);
      const above = verdict('600', [], { floor });
      expect(above.verdict).to.equal('unknown');
      expect(above.band).to.deep.equal({ lower: '5.00', upper: null, lower_open: false, upper_open: true, method: 'floor_only' });
      expect(above.reasons.join(' ')).to.match(/never makes a price high/);
    });

    it('floor with too few observations is still one-sided', () => {
      const v = verdict('4', [obs('ws_a', 'a', '10.00')], { floor: { value: '5', from: ['min_price'] } });
      expect(v.verdict).to.equal('low');
      expect(v.band.upper_open).to.equal(true);
      expect(v.band.upper).to.equal(null);
    });

    it('ceiling only: high above it, otherwise unknown with the band (open, ceiling]', () => {
      const ceiling = { value: '10', from: ['max_price'] };
      const high = verdict('12', [], { ceiling });
      expect(high.verdict).to.equal('high');
      expect(high.basis).to.equal('ceiling');
      expect(high.band).to.deep.equal({ lower: null, upper: '10.00', lower_open: true, upper_open: false, method: 'ceiling_only' });
      const below = verdict('0.01', [], { ceiling });
      expect(below.verdict).to.equal('unknown');
      expect(below.band.lower_open).to.equal(true);
      expect(below.reasons.join(' ')).to.match(/never makes a price low/);
    });
  });

  describe('independence', () => {
    it('discloses evidence from the caller\'s own workspace', () => {
      const v = verdict('10.05', [...market(), obs('ws_caller', 'my-shop', '10.00'), obs('ws_caller', 'my-shop', '10.10')]);
      expect(v.verdict).to.equal('reasonable');
      expect(v.independence.independent).to.equal(false);
      expect(v.independence.own_workspace_observations).to.equal(2);
      expect(v.independence.own_workspace_share).to.equal(0.167);
      expect(v.independence.reasons.join(' ')).to.match(/2 observation\(s\) \(17% of the weight\) come from your own workspace/);
      expect(v.reference?.source_labels.find((s) => s.label === 'my-shop')?.own_workspace).to.equal(true);
      expect(v.confidence_factors.independence).to.be.lessThan(1);
    });

    it('discloses single-source evidence (and does not judge on it by default)', () => {
      const single = Array.from({ length: 8 }, (_, i) => obs('ws_a', 'one-feed', (10 + i / 10).toFixed(2)));
      const v = verdict('10.3', single);
      expect(v.verdict).to.equal('unknown');
      expect(v.independence.independent).to.equal(false);
      expect(v.independence.reasons[0]).to.match(/fewer than 2 distinct sources: all 8 observation\(s\) come from one source \("one-feed"\)/);
      expect(v.reasons.join(' ')).to.match(/1 distinct source\(s\), below the minimum 2/);
      const allowed = verdict('10.3', single, { thresholds: { ...THRESHOLDS, minSources: 1, minEffectiveObservations: 1 } });
      expect(allowed.verdict).to.equal('reasonable');
      expect(allowed.independence.independent).to.equal(false);
      expect(allowed.confidence_factors.independence).to.equal(0.5);
    });

    it('discloses one workspace submitting over half the weight, and caps it at the next-heaviest workspace\'s', () => {
      const v = verdict('10', [...Array.from({ length: 6 }, (_, i) => obs('ws_a', 'bulk', (10 + i / 100).toFixed(2), i + 1)), obs('ws_b', 'b', '10.20'), obs('ws_c', 'c', '9.90')]);
      expect(v.independence.independent).to.equal(false);
      expect(v.independence.reasons.join(' ')).to.match(/one workspace submitted \d+% of the weight \(6 of 8 observations\), over half: its weight is capped at the next-heaviest workspace's, and like every workspace it counts once/);
      // Capped, "bulk" weighs as much as each of the other two.
      expect(v.independence.largest_source_share).to.equal(0.333);
      expect(v.reference?.effective_n).to.equal(3);
    });

    it('discloses one source carrying over half the weight of a single workspace\'s evidence', () => {
      const v = verdict('10', [...Array.from({ length: 6 }, (_, i) => obs('ws_a', 'bulk', (10 + i / 100).toFixed(2), i + 1)), obs('ws_a', 'side', '10.20')]);
      expect(v.independence.reasons.join(' ')).to.match(/one source \("bulk"\) carries \d+% of the weight, over half/);
      expect(v.independence.largest_source_share).to.be.greaterThan(0.5);
    });

    it('excludes the caller\'s own echo of the proposed or current price as circular', () => {
      const echo = [obs('ws_caller', 'mine', '12.00'), obs('ws_caller', 'mine', '11.00'), obs('ws_other', 'theirs', '12.00')];
      const v = verdict('12.00', [...market(), ...echo], { currentPrice: '11' });
      expect(v.independence.excluded_circular).to.equal(2);
      expect(v.evidence.used).to.equal(11);
      expect(v.independence.independent).to.equal(false);
      expect(v.independence.reasons.join(' ')).to.match(/2 observation\(s\) of your own workspace equal to the proposed price or your current price were excluded as circular evidence/);
      // Another workspace's equal price is evidence, not an echo.
      expect(v.reference?.source_labels.map((s) => s.label)).to.include('theirs');
    });

    it('counts exact copies once', () => {
      const o = obs('ws_f', 'copy', '10.00');
      const v = verdict('10', [...market(), o, { ...o, id: 'obs_copy' }]);
      expect(v.independence.duplicates_removed).to.equal(1);
      expect(v.evidence.used).to.equal(11);
    });

    it('counts one workspace\'s quotes of one amount once, whatever the label or time, keeping the freshest', () => {
      const copies = [obs('ws_f', 'a', '10.00', 5), obs('ws_f', 'b', '10.0', 1), obs('ws_f', 'a', '10.00', 3), obs('ws_g', 'e', '10.00', 2)];
      const v = verdict('10', [...market(), ...copies]);
      expect(v.independence.duplicates_removed).to.equal(2);
      expect(v.evidence.used).to.equal(12);
      // The freshest (a day old, under "b") is kept, wherever it comes in the rows; another workspace's equal quote is its own evidence.
      expect(v.reference?.source_labels.map((s) => s.label)).to.include.members(['b', 'e']).and.not.include('a');
      expect(v.reference?.newest_age_days).to.equal(1);
    });

    it('treats the keyless demo as having no own workspace', () => {
      const v = verdict('10.05', market(), { callerWorkspaceId: null });
      expect(v.independence.own_workspace_observations).to.equal(0);
      expect(v.independence.independent).to.equal(true);
    });
  });
});

describe('verification: shares in reasons', () => {
  it('reads a share in whole percent, with the decimals it takes never to show 50% for a share over half', () => {
    expect(pct(0.3)).to.equal('30%');
    expect(pct(0.86)).to.equal('86%');
    expect(pct(0.5004)).to.equal('50.04%');
    expect(pct(0.50001)).to.equal('50.001%');
    expect(pct(0.504)).to.equal('50.4%');
  });
});
