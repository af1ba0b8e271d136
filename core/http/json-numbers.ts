import Decimal from 'decimal.js';

/**
 * JSON numbers whose decimal text is not what the service reads. JSON.parse turns a number into a
 * double, which holds about 15 significant digits: 20.123456789012345 arrives as 20.123456789012344,
 * 9007199254740993 as …992, and an amount read from it would be another amount than the one sent.
 * Only the raw body text shows what was sent, so a route that reads amounts from JSON numbers names
 * their paths (RouteSpec.exactNumbers) and such a number there is refused, asking for the decimal
 * string, rather than judged or recorded as a neighbour.
 */

/** A number as sent and as read (decimal text of the double JSON.parse makes of it). */
export interface InexactNumber {
  /** Dotted path of the value in the body: `proposed_price`, `context.unit_cost`, `items.0.price`. */
  path: string;
  sent: string;
  read: string;
}

/** Up to 15 significant digits a double keeps exactly: a text with no run of 16 digits or points cannot lose any. */
const MAY_LOSE_DIGITS = /\d[\d.]{15}/;
const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const WORD = /true|false|null/y;

type Frame = { kind: 'object'; key: string | null } | { kind: 'array'; index: number };

/**
 * The numbers at `paths` (dotted) whose text differs in value from what JSON.parse gives, in one pass
 * over valid JSON text (parse it first) without recursion. A key repeated in an object is read as
 * JSON.parse reads it: the last one counts.
 */
export function inexactNumbers(text: string, paths: readonly string[]): InexactNumber[] {
  if (paths.length === 0 || !MAY_LOSE_DIGITS.test(text)) return [];
  const wanted = new Set(paths);
  const found = new Map<string, InexactNumber>();
  const stack: Frame[] = [];
  const pathHere = (): string => stack.map((f) => (f.kind === 'object' ? (f.key ?? '') : String(f.index))).join('.');
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '{') {
      stack.push({ kind: 'object', key: null });
      i++;
    } else if (c === '[') {
      stack.push({ kind: 'array', index: 0 });
      i++;
    } else if (c === '}' || c === ']') {
      stack.pop();
      i++;
    } else if (c === ',') {
      const top = stack[stack.length - 1];
      if (top?.kind === 'array') top.index++;
      else if (top) top.key = null;
      i++;
    } else if (c === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      // A string in key position names the value that follows; any other string is a value, of no interest here.
      if (top?.kind === 'object' && top.key === null) {
        top.key = JSON.parse(text.slice(i, end + 1)) as string;
        // A key repeated: its last value is the one read, whatever the earlier one was.
        found.delete(pathHere());
      }
      i = end + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      const sent = NUMBER.exec(text)?.[0] ?? c;
      i += sent.length;
      const path = pathHere();
      if (!wanted.has(path)) continue;
      const read = String(Number(sent));
      if (!new Decimal(sent).eq(new Decimal(read))) found.set(path, { path, sent, read: new Decimal(read).toFixed() });
    } else {
      WORD.lastIndex = i;
      i += WORD.exec(text)?.[0].length ?? 1;
    }
  }
  return [...found.values()];
}
