/**
 * The contract of a pricing method running inside a worker thread. Everything crossing the worker
 * boundary is plain JSON: money as decimal strings, never objects that cannot be cloned.
 */
export type Context = Record<string, unknown>;

export interface MethodResult {
  /** Decimal string in the currency's minor units, e.g. "19.99". */
  price: string;
  currency: string;
  /** 0 to 1: how much the evidence supports this price. */
  confidence: number;
  /** Named factors whose product (or combination) gave the confidence, so a low number can be explained. */
  confidence_factors: Record<string, number>;
  /** The context inputs the method used. */
  inputs_used: string[];
  /** Human-readable notes: defaults applied, bounds that bound, conflicts resolved. */
  notes: string[];
  details?: Record<string, unknown>;
}

/**
 * Thrown when a method cannot price this context; the message names the missing inputs. `refused`:
 * the context gave a value no method may read that way (a rate of 30 meant as 30 %, an amount past
 * 10^15, a count below 0): the caller's mistake, answered 422 naming it rather than passed over for
 * another function that happens not to read it.
 */
export class MethodNotApplicable extends Error {
  constructor(
    message: string,
    readonly missing: string[],
    readonly refused = false,
  ) {
    super(message);
    this.name = 'MethodNotApplicable';
  }
}

/**
 * Price observations of the context's product type stored on the network (contributions and
 * accepted outcomes), summarised per source. The service supplies it to built-in methods only; it is
 * never sent to a workspace's external function.
 */
export interface MarketEvidence {
  product_type: string;
  currency: string;
  /** Observations behind the summary. */
  observations: number;
  /** The median price of each distinct source (workspace and source label). */
  source_prices: number[];
  /**
   * The reference across sources, when the provider computes it with its own statistic (the
   * service: verification's time-weighted median of source medians); else the plain median of
   * source_prices is used.
   */
  reference_price?: number;
  /**
   * The band a price verdict judges against (lower and upper bound, a price on a bound being inside), when the provider
   * computes it and its evidence is sufficient for a verdict (the service: verification's reference × exp(±max(k·σ,
   * ln(1 + minimum half-width))), its bounds as a verdict shows them; a lower bound of 0 is open). Without it no price is
   * called inside or outside the network's band: the reference alone is compared with.
   */
  band?: { lower: number; upper: number };
  /** The largest source's share of the total weight (0 to 1), when the provider weighs sources. */
  largest_source_share?: number;
  /** Distinct workspaces the observations come from. */
  workspaces: number;
  /**
   * Why the observations give no reference though there are some: the provider's statistic sets them aside (the
   * service: a reference one workspace moves, or one lying between two groups of prices, as a verdict would call it).
   * `source_prices` is then empty, so nothing is positioned on them, and a refusal says why rather than that none exist.
   */
  withheld?: string;
}

export type PricingMethod = (context: Context, market?: MarketEvidence) => MethodResult | Promise<MethodResult>;
