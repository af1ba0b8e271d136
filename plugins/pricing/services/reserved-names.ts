import { BUILTINS } from '../../../engine';

/**
 * Names and tags a workspace function may not take because they pass for the service's own
 * functions (docs/functions.md "Names of workspace functions"): `cost_plus`, `costplus` or
 * `cost-plus-v2` read as the built-in `cost-plus`, and a `built-in` or `official` name or tag as
 * the service vouching for the function.
 */

/** Lower case, without "-", "_", "." (and white space, which tags may hold): how look-alikes compare. */
const squash = (s: string): string => s.toLowerCase().replace(/[-_.\s]/g, '');

const BUILTIN_STEMS = BUILTINS.map((b) => ({ name: b.name, stem: squash(b.name) }));

/** Words that claim the service's own endorsement, as a whole name or tag. */
const OFFICIAL_WORDS: ReadonlySet<string> = new Set(['builtin', 'official']);

/** What a workspace function named `name` would pass for, or null when the name is free to take. */
export function impersonatedBy(name: string): string | null {
  const stem = squash(name);
  const builtin = BUILTIN_STEMS.find((b) => stem.startsWith(b.stem));
  if (builtin) return `the built-in function ${builtin.name}`;
  return OFFICIAL_WORDS.has(stem) ? "the service's own functions" : null;
}

/**
 * The built-in a reference spells another way (`cost_plus`, `CostPlus`, `cost plus` for cost-plus), or undefined. No
 * workspace function may take such a name, so a 404 suggesting the built-in says nothing of any workspace's functions.
 */
export function builtinSpelledAs(ref: string): (typeof BUILTINS)[number] | undefined {
  const stem = squash(ref.trim());
  return BUILTINS.find((b) => squash(b.name) === stem || squash(b.id) === stem);
}

/** Whether a workspace function may not carry `tag` (built-in, builtin, official, in any case or spelling). */
export const isReservedTag = (tag: string): boolean => OFFICIAL_WORDS.has(squash(tag));
