/**
 * Text PostgreSQL cannot store: NUL (in no text or JSON column) and unpaired UTF-16 surrogates
 * (refused in JSON, and not UTF-8). A request carrying them is refused at the door; values the
 * service builds itself are written with replacements (see storableText).
 */

/** JSON escapes that may stand for such text: NUL, and surrogates (paired ones are told apart after parsing). */
export const UNSTORABLE_ESCAPE = /\\u0000|\\ud[89a-f][0-9a-f]{2}/i;
const NUL = String.fromCharCode(0);
export const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function unstorable(text: string): boolean {
  LONE_SURROGATE.lastIndex = 0;
  return text.includes(NUL) || LONE_SURROGATE.test(text);
}

/** A string as PostgreSQL will store it (NUL and unpaired surrogates as U+FFFD). */
export function storableText(value: string): string {
  return value.replaceAll(NUL, '\ufffd').replace(LONE_SURROGATE, '\ufffd');
}

/** The path of the first string or key in a parsed JSON value that cannot be stored, or null. */
export function unstorablePath(value: unknown, path: Array<string | number> = []): Array<string | number> | null {
  if (typeof value === 'string') return unstorable(value) ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorablePath(value[i], [...path, i]);
      if (found) return found;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (unstorable(k)) return [...path, k];
      const found = unstorablePath(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

/** A parsed JSON value with every string, and every key, that cannot be stored left out: the example of a refusal of them. */
export function withoutUnstorable(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((v) => typeof v !== 'string' || !unstorable(v)).map(withoutUnstorable);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k, v]) => !unstorable(k) && (typeof v !== 'string' || !unstorable(v)))
        .map(([k, v]) => [k, withoutUnstorable(v)]),
    );
  }
  return value;
}
