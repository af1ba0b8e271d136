import { amountMeant, EXAMPLE_PRODUCT_TYPE, EXAMPLE_SOURCE, isoHoursAgo, observationItem } from '../schemas';

type Item = Record<string, unknown>;
const isObject = (v: unknown): v is Item => v !== null && typeof v === 'object' && !Array.isArray(v);
/** The keys of one observation: a body holding any of them at the top level is taken as one observation sent unwrapped. */
const ITEM_KEYS = ['product_type', 'currency', 'amount', 'observed_at', 'source'];
// eslint-disable-next-line no-control-regex -- the control characters an item's text is refused for, taken out
const CONTROL_CHARS = /[\u0000-\u001F\u007F-\u009F]/g;
/**
 * One refused observation made into the example's: each field that passes kept as sent, what was refused corrected
 * where the caller's meaning is plain (an amount's form, a currency's spaces, a text's control characters), a refused
 * observed_at replaced by a recent time, a missing or uncorrectable product_type or source by a placeholder naming
 * itself, a missing currency by USD (what verify reads when a context names none), refused context keys and unknown
 * fields left out. undefined when the price itself cannot be kept (its amount, or the currency it is in, is missing or
 * unreadable): any number in its place would be a price nobody observed, stored under the caller's product if posted.
 */
function itemOf(sent: unknown, fields: ReturnType<typeof observationItem>['shape'], now: () => number): Item | undefined {
  if (!isObject(sent)) return undefined;
  const passes = (name: keyof typeof fields, v: unknown): boolean => fields[name].safeParse(v).success;
  const text = (name: 'product_type' | 'source', placeholder: string): unknown => {
    const v = sent[name];
    if (passes(name, v)) return v;
    const cleaned = typeof v === 'string' ? v.replace(CONTROL_CHARS, '').trim() : undefined;
    return cleaned !== undefined && passes(name, cleaned) ? cleaned : placeholder;
  };
  const amount = amountMeant(sent.amount);
  const sentCurrency = typeof sent.currency === 'string' ? sent.currency.trim() : sent.currency;
  const currency = sent.currency === undefined || sent.currency === null ? 'USD' : passes('currency', sentCurrency) ? sentCurrency : undefined;
  if (amount === undefined || currency === undefined) return undefined;
  const item: Item = {
    product_type: text('product_type', EXAMPLE_PRODUCT_TYPE),
    currency,
    amount,
    observed_at: passes('observed_at', sent.observed_at) ? sent.observed_at : isoHoursAgo(now, 0),
    source: text('source', EXAMPLE_SOURCE),
  };
  if (isObject(sent.context)) {
    const kept = Object.entries(sent.context).filter(([k, v]) => passes('context', { [k]: v }));
    if (kept.length > 0) item.context = Object.fromEntries(kept.slice(0, 20));
  }
  return item;
}

/**
 * A refused observations body made into its example, from what was sent (itemOf, item by item): the observations
 * whose price can be kept, at most `maxPerRequest` of them; a single observation sent without the list, or as the
 * list's only value, put in one. undefined, so the route's stock example (schemas' observationsExample) is given, when
 * no observation can be made. The pipeline gives it only when it passes the body.
 */
export function observationsExampleFor(now: () => number, maxPerRequest: number, retentionDays: number): (sent: unknown) => unknown {
  const fields = observationItem(now, retentionDays).shape;
  return (sent) => {
    const list = isObject(sent) && 'observations' in sent ? sent.observations : ITEM_KEYS.some((k) => isObject(sent) && k in sent) ? [sent] : sent;
    const items = (Array.isArray(list) ? list : [list]).map((o) => itemOf(o, fields, now)).filter((o): o is Item => o !== undefined);
    return items.length > 0 ? { observations: items.slice(0, maxPerRequest) } : undefined;
  };
}
