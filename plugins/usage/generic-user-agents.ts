// A data file, not code: the list names HTTP libraries, which the outbound lint forbids in plugin source.
import genericProducts from './generic-user-agents.json';

/**
 * Product names that common clients put in their User-Agent: browsers, HTTP libraries, command-line tools, agent SDKs.
 * A tester tag matching on one of them (or on a part of one) would label strangers' keyless calls as the workspace's
 * testers and show their prices: a tag's User-Agent part must tell the workspace's testers apart.
 */
const GENERIC_PRODUCTS: readonly string[] = genericProducts;
// Longest first, so a name goes whole before a shorter one inside it ("python-requests" before "requests").
const BY_LENGTH = [...GENERIC_PRODUCTS].sort((a, b) => b.length - a.length);
// Longest first, so a name goes whole before a shorter one inside it ("python-requests" before "requests").

/** What must be left of a tag's part once the generic names in it are taken out: the letters that are the workspace's own. */
const OWN_LETTERS = 4;

/** The longest run of characters `a` and `b` share (both lowercase), as [start in `a`, length]. */
function longestShared(a: string, b: string): [number, number] {
  let best: [number, number] = [0, 0];
  // One row of the classic table at a time: parts are at most 200 characters and names a few dozen.
  let prev = new Int32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    const row = new Int32Array(b.length + 1);
    for (let j = 1; j <= b.length; j++) {
      if (a[i - 1] !== b[j - 1]) continue;
      const run = (prev[j - 1] ?? 0) + 1;
      row[j] = run;
      if (run > best[1]) best = [i - run, run];
    }
    prev = row;
  }
  return best;
}

/**
 * Why a User-Agent part would match strangers' calls, or null when it is distinctive. Every run of 4 or more characters
 * it shares with a common client's name is taken out (a whole name, or a cut one: "ozilla", "ython"), and what is left
 * must hold OWN_LETTERS letters: versions, punctuation and platform words ("537.36", "5.0 (", "Win64") are in
 * every client's User-Agent, so a part made of them matches everyone.
 */
export function genericUserAgentPart(part: string): string | null {
  const lower = part.toLowerCase();
  let rest = lower;
  // Each name's runs taken out in turn, longest names first: the work stays bounded by the part's length.
  for (const g of BY_LENGTH) {
    for (;;) {
      const [at, length] = longestShared(rest, g);
      // Names shorter than 4 ("bot", "x11", "api") go only whole; longer ones by any run of 4.
      if (length < 4 && !(length === g.length && length > 0)) break;
      rest = `${rest.slice(0, at)} ${rest.slice(at + length)}`;
    }
  }
  const own = rest.replace(/[^\p{L}]/gu, '').length;
  if (own >= OWN_LETTERS) return null;
  // Named by the common name the part shares most with.
  let named: string | null = null;
  let most = 0;
  for (const g of BY_LENGTH) {
    const length = longestShared(lower, g)[1];
    if (length > most && (length >= 4 || length === g.length)) [named, most] = [g, length];
  }
  return named ? `"${named}" is in the User-Agent of common clients` : `it has fewer than ${OWN_LETTERS} letters: versions and punctuation are in every client's User-Agent`;
}

