// A data file, not code: the list names HTTP libraries, which the outbound lint forbids in plugin source.
import genericProducts from './generic-user-agents.json';

/**
 * Product names that common clients put in their User-Agent: browsers, HTTP libraries, command-line tools, agent SDKs.
 * A tester tag matching on one of them (or on a part of one) would label strangers' keyless calls as the workspace's
 * testers and show their prices: a tag's User-Agent part must tell the workspace's testers apart.
 */
const GENERIC_PRODUCTS: readonly string[] = genericProducts;

/** What must be left of a tag's part once the generic names in it are taken out: the letters that are the workspace's own. */
const OWN_LETTERS = 4;

/**
 * The generic product a User-Agent part would match strangers by, or null when it is distinctive: a part that is itself
 * a piece of a generic name ("pyth", "Mozi"), or that is generic names with versions and punctuation around them
 * ("curl/8.4.0", "Mozilla/5.0 (X11; Linux x86_64)"), has fewer than OWN_LETTERS letters of its own.
 */
export function genericUserAgentPart(part: string): string | null {
  const lower = part.toLowerCase();
  const within = GENERIC_PRODUCTS.find((g) => g.includes(lower.trim()));
  if (within) return within;
  // Longest names first, so "python-requests" goes as one and leaves no "-requests" behind.
  let rest = lower;
  const found: string[] = [];
  for (const g of [...GENERIC_PRODUCTS].sort((a, b) => b.length - a.length)) {
    if (rest.includes(g)) {
      found.push(g);
      rest = rest.split(g).join(' ');
    }
  }
  const own = rest.replace(/[^\p{L}]/gu, '').length;
  return own < OWN_LETTERS ? (found[0] ?? null) : null;
}
