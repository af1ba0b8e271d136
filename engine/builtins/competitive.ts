import { D, MAX_AMOUNT, currencyOf, describeCurrencies, exactMedian, mad, markupFraction, median, num, observations, positiveMoney, round3, toPrice, methodResult, highestFloor, floorAboveCeiling } from './inputs';
import type { Bound, Dec } from './inputs';
import { MethodNotApplicable } from './types';
import type { Context, MarketEvidence, MethodResult } from './types';

const DEFAULT_STEP = 0.05;
const MAX_AMOUNT_NUMBER = MAX_AMOUNT.toNumber();
/** Past this share of the weight one source dominates the reference (as verification judges it). */
const DOMINANT_SHARE = 0.5;

/**
 * Confidence factor of a reference taken from the network's observations rather than the caller's
 * own competitor list: other sellers' prices of a product type of the same name are weaker evidence
 * for this product than the competitors its seller chose.
 */
export const NETWORK_PROVENANCE = 0.6;

/** The prices a reference is taken from: one number per source, with where they came from. */
interface Reference {
  perSource: number[];
  /** The reference across sources when already computed; else the median of perSource. */
  ref?: number;
  independence: number;
  /** What the amount factor counts when not every source is independent (the network's: its workspaces). */
  independent?: number;
  factors: Record<string, number>;
  used: string[];
  notes: string[];
  details: Record<string, unknown>;
}

/** Sent competitor_prices that give no reference: why (a phrase for a note), and the refusal competitive positioning answers. */
interface NoReference {
  why: string;
  message: string;
}

const NEEDS_COMPETITOR_PRICES = 'competitive positioning needs competitor_prices (positive numbers or {price, source})';
/** The other way in, while the network's observations are served (a service without them takes this clause out of its answers). */
export const NETWORK_OBSERVATIONS_CLAUSE = ', or a product_type the network holds price observations of (POST /api/data/observations)';

/**
 * The caller's competitor_prices, grouped by source (a seller listed many times counts once); null
 * when none were sent, and why not when those sent give no reference (an empty list, no usable
 * price, none in the context's currency).
 */
function callerReference(ctx: Context, currency: string): Reference | NoReference | null {
  const raw = ctx.competitor_prices;
  if (raw == null) return null;
  if (!Array.isArray(raw)) return { why: 'it is not a list', message: `${NEEDS_COMPETITOR_PRICES} as a list; got ${typeof raw}.` };
  const { usable, dropped, tooLarge, otherCurrency } = observations(ctx, 'competitor_prices');
  const foreign = [...otherCurrency.values()].reduce((a, b) => a + b, 0);
  if (usable.length === 0 && foreign > 0) {
    return {
      why: `none is in the context's currency ${currency} (${describeCurrencies(otherCurrency)}), and prices are never mixed across currencies`,
      message: `No competitor price is in the context's currency ${currency} (${describeCurrencies(otherCurrency)}): prices are never mixed across currencies; send them in ${currency}, or set currency to theirs.`,
    };
  }
  const notPositive = dropped - foreign - tooLarge;
  const over = `above ${MAX_AMOUNT.toFixed()}, too large to be a price`;
  if (usable.length === 0) {
    let why = `none of the ${raw.length} is a positive number`;
    if (raw.length === 0) why = 'the list is empty';
    else if (tooLarge > 0) why = `none of the ${raw.length} is usable (${[...(notPositive > 0 ? [`${notPositive} not a positive number`] : []), `${tooLarge} ${over}`].join(', ')})`;
    return { why, message: `${NEEDS_COMPETITOR_PRICES}; ${why}.` };
  }
  const notes: string[] = [];
  if (notPositive > 0) notes.push(`${notPositive} competitor price(s) were not positive numbers and were dropped`);
  if (tooLarge > 0) notes.push(`${tooLarge} competitor price(s) were ${over}, and were dropped`);
  if (foreign > 0) notes.push(`${foreign} competitor price(s) in another currency than ${currency} were dropped (${describeCurrencies(otherCurrency)}): prices are never mixed across currencies`);
  // An unlabelled price repeated exactly (same amount, same observed_at or none) is one observation copied, not another
  // seller: counted once (a repeated quote is not more evidence). Distinct sellers at one price are told apart by source.
  const groups = new Map<string, number[]>();
  let copies = 0;
  for (const o of usable) {
    const key = o.source !== null ? `source:${o.source}` : `unlabelled:${o.price}:${o.observedAt ?? ''}`;
    const group = groups.get(key);
    if (group && o.source === null) copies++;
    else groups.set(key, [...(group ?? []), o.price]);
  }
  if (copies > 0) notes.push(`${copies} unlabelled competitor price(s) repeated another exactly and were counted once: label each with its source ({price, source}) to count distinct sellers at one price`);
  // Fewer than two sources is no independent evidence, labelled or not (one price is one source, as one seller is).
  const independence = groups.size < 2 ? 0.5 : 1;
  if (independence < 1) notes.push(usable.length === 1 ? 'one competitor price: evidence from a single source is not independent' : 'every competitor price comes from one source: evidence is not independent');
  return { perSource: [...groups.values()].map(median), independence, factors: {}, used: ['competitor_prices'], notes, details: {} };
}

/**
 * Why the caller's competitor_prices give no reference (a phrase for a note); undefined when they
 * give one, or when none were sent.
 */
export function competitorPricesProblem(ctx: Context): string | undefined {
  const r = callerReference(ctx, currencyOf(ctx));
  return r && 'why' in r ? r.why : undefined;
}

/**
 * With no competitor_prices, the network's observations of the context's product type in its
 * currency (already one median per source). Observations all from one workspace are not independent.
 */
function networkReference(ctx: Context, market: MarketEvidence | undefined, currency: string): Reference | null {
  if (ctx.competitor_prices != null || !market || market.currency !== currency) return null;
  // Like a caller's competitor prices, amounts past the bound are dropped (and a reference computed with them is not used).
  const usable = (p: number) => Number.isFinite(p) && p > 0 && p <= MAX_AMOUNT_NUMBER;
  const perSource = market.source_prices.filter(usable);
  if (perSource.length === 0) return null;
  const independence = market.workspaces <= 1 ? 0.5 : 1;
  const notes = [
    `no competitor_prices sent: the reference is ${market.observations} price observation(s) of "${market.product_type}" in ${currency} from ${perSource.length} source(s) on the network, not a competitor list of your own`,
  ];
  const dropped = market.source_prices.length - perSource.length;
  if (dropped > 0) notes.push(`${dropped} of the network's source price(s) were above ${MAX_AMOUNT.toFixed()}, the largest price the service quotes, and were dropped`);
  if (independence < 1) notes.push('every observation comes from one workspace: evidence is not independent');
  const factors: Record<string, number> = { provenance: NETWORK_PROVENANCE };
  const share = market.largest_source_share;
  if (share !== undefined && perSource.length >= 2 && round3(share) > DOMINANT_SHARE) {
    factors.dominance = round3(1 - (share - DOMINANT_SHARE));
    notes.push(`one source carries ${Math.round(share * 100)}% of the observations' weight, over half`);
  }
  const ref = market.reference_price;
  // As a verdict counts them: one workspace under several source labels is one piece of evidence.
  const independent = Math.min(perSource.length, Math.max(1, market.workspaces));
  if (independent < perSource.length) notes.push(`the amount of evidence counts the ${independent} workspace(s) behind the ${perSource.length} sources: a workspace counts once, however many labels it quotes under`);
  return {
    perSource,
    independent,
    ...(ref !== undefined && usable(ref) && perSource.length === market.source_prices.length ? { ref } : {}),
    independence,
    factors,
    used: ['product_type', 'network_observations'],
    notes,
    details: { reference: 'network_observations', observations: market.observations },
  };
}

/**
 * The reference competitive positioning would take from the network's observations (in exact decimal), with what it
 * rests on; null when it would take none (a competitor list sent, no evidence in the context's currency, none usable).
 */
export function networkReferencePrice(ctx: Context, market: MarketEvidence | undefined): { price: Dec; sources: number; observations: number } | null {
  const r = networkReference(ctx, market, currencyOf(ctx));
  if (!r || !market) return null;
  return { price: r.ref !== undefined ? new D(r.ref) : exactMedian(r.perSource), sources: r.perSource.length, observations: market.observations };
}

/**
 * Why the network's observations give no reference though the context would take one from them: the provider set them
 * aside (withheld), or every source's price is past the largest amount the service quotes (a clause for the refusal);
 * '' otherwise.
 */
function networkTooLarge(ctx: Context, market: MarketEvidence | undefined, currency: string): string {
  if (ctx.competitor_prices != null || !market || market.currency !== currency) return '';
  if (market.withheld) return `; the network holds ${market.observations} price observation(s) of "${market.product_type}" in ${currency}, but ${market.withheld}, so they give no reference (POST /api/price-router/verify shows the evidence)`;
  if (market.source_prices.length === 0) return '';
  if (!market.source_prices.every((p) => p > MAX_AMOUNT_NUMBER)) return '';
  return `; the network holds ${market.observations} price observation(s) of "${market.product_type}" in ${currency}, but every source's price is above ${MAX_AMOUNT.toFixed()}, the largest price the service quotes, so none is a reference`;
}

/** Whether competitive positioning would take its reference from the network's observations. */
export function hasNetworkReference(ctx: Context, market: MarketEvidence | undefined): boolean {
  return networkReference(ctx, market, currencyOf(ctx)) !== null;
}

/**
 * Competitive positioning: a robust reference (median of per-source medians, so one seller listing
 * many times counts once) then match, undercut by x or premium by x, within floors and ceilings.
 * The reference comes from the caller's `competitor_prices`, else from the network's observations of
 * the context's `product_type` (market evidence the service supplies).
 * Confidence = n/(n + 3) × 1/(1 + rCV) × independence (× provenance 0.6 for network observations),
 * where rCV = 1.4826·MAD/median; n counts sources, of the network's observations their workspaces.
 */
export function competitive(ctx: Context, market?: MarketEvidence): MethodResult {
  const currency = currencyOf(ctx);
  const reference = callerReference(ctx, currency) ?? networkReference(ctx, market, currency);
  if (!reference) throw new MethodNotApplicable(`${NEEDS_COMPETITOR_PRICES}${NETWORK_OBSERVATIONS_CLAUSE}${networkTooLarge(ctx, market, currency)}.`, ['competitor_prices']);
  if ('why' in reference) throw new MethodNotApplicable(reference.message, ['competitor_prices']);
  const { perSource, independence } = reference;
  const notes = [...reference.notes];
  const n = perSource.length;
  // In exact decimal: the mean of two middle prices in binary floating point can round the wrong way (1.135 → 1.13).
  const refExact = reference.ref !== undefined ? new D(reference.ref) : exactMedian(perSource);
  const ref = refExact.toNumber();

  const position = typeof ctx.position === 'string' ? ctx.position : 'match';
  if (!['match', 'undercut', 'premium', 'lowest'].includes(position)) throw new MethodNotApplicable('position must be match, undercut, premium or lowest.', ['position'], true);
  // Only the rate the position uses is read: another one sent is unused, and said so rather than refused or applied.
  const stepKey = position === 'premium' ? 'premium_pct' : position === 'match' ? undefined : 'undercut_pct';
  const step = (stepKey ? num(ctx, stepKey) : undefined) ?? DEFAULT_STEP;
  if (stepKey && (step < 0 || step >= 1)) throw new MethodNotApplicable(`${stepKey} is a fraction in [0, 1) (0.05 means 5%), got ${step}.`, [stepKey], true);
  const unused = ['undercut_pct', 'premium_pct'].filter((k) => k !== stepKey && ctx[k] != null);
  if (unused.length) notes.push(`${unused.join(' and ')} not used: position ${position} ${stepKey ? `reads ${stepKey}` : 'takes no rate'}`);
  let price = refExact;
  if (position === 'undercut') price = price.times(1 - step);
  else if (position === 'premium') price = price.times(1 + step);
  else if (position === 'lowest') price = new D(Math.min(...perSource)).times(1 - step);

  const unitCost = positiveMoney(ctx, 'unit_cost');
  const minMarkup = markupFraction(ctx, 'min_markup') ?? 0;
  const minPrice = positiveMoney(ctx, 'min_price');
  const costKeys = ['unit_cost', ...(ctx.min_markup != null ? ['min_markup'] : [])];
  const floors: Bound[] = [...(minPrice ? [{ value: minPrice, name: 'min_price' }] : []), ...(unitCost ? [{ value: unitCost.times(1 + minMarkup), name: costKeys.join(' with '), keys: costKeys }] : [])];
  const floor = highestFloor(floors);
  const ceiling = positiveMoney(ctx, 'max_price');
  if (floor && ceiling && floor.value.gt(ceiling)) throw floorAboveCeiling(floor, ceiling, currency);
  let bound = 1;
  if (floor && price.lt(floor.value)) {
    price = floor.value;
    bound = 0.8;
    notes.push(`${position} not possible above the floor (${floor.name} ${floor.value.toDecimalPlaces(8).toFixed()}): the floor binds`);
  }
  if (ceiling && price.gt(ceiling)) {
    price = ceiling;
    bound = 0.8;
    notes.push('max_price caps the price');
  }
  const rcv = ref > 0 ? (1.4826 * mad(perSource)) / ref : 1;
  const counted = reference.independent ?? n;
  const factors = { amount: round3(counted / (counted + 3)), agreement: round3(1 / (1 + rcv)), independence, bounds: bound, ...reference.factors };
  return methodResult(price, currency, factors, [...reference.used, ...(ctx.position ? ['position'] : []), ...(floor ? (floor.keys ?? [floor.name]) : []), ...(ceiling ? ['max_price'] : [])], notes, {
    reference_price: toPrice(refExact, currency),
    sources: n,
    price_index: round3((price.toNumber() / ref) * 100),
    position,
    ...reference.details,
  }, { floor, ceiling: ceiling ? { value: ceiling, name: 'max_price' } : undefined });
}
