import { distance } from 'fastest-levenshtein';
import type { z } from 'zod';
import { ApiError } from './errors';
import type { ErrorIssue } from './errors';

export interface ValidationOptions {
  /** A body, query or params object that passes the schema, returned with the error. */
  example?: unknown;
  hint?: string;
  /** Which part of the request was checked, used in the default message and hint. */
  where?: 'body' | 'query' | 'params' | 'headers' | 'arguments';
}

function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(root)';
  return path.map((p) => String(p)).join('.');
}

/** zod's type names as a reader would say them. */
const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
  record: 'an object',
  null: 'null',
  undefined: 'nothing',
};
const typeWord = (t: string): string => TYPE_WORDS[t] ?? t;

/** The value at a zod issue's path, to tell a missing field from a wrong one. */
function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  let v = value;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

/** Of several maxima one field is over (an int's safe range beside the schema's own), the tightest. */
function tightestMaxima(issues: z.ZodError['issues']): z.ZodError['issues'] {
  const tightest = new Map<string, number>();
  for (const i of issues) {
    if (i.code !== 'too_big' || typeof i.maximum !== 'number') continue;
    const at = JSON.stringify(i.path);
    tightest.set(at, Math.min(tightest.get(at) ?? Infinity, i.maximum));
  }
  return issues.filter((i) => i.code !== 'too_big' || typeof i.maximum !== 'number' || i.maximum === tightest.get(JSON.stringify(i.path)));
}

/**
 * zod's default wording of a bound ("Too small: expected string to have >=2 characters") as a
 * sentence a caller reads ("must be at least 2 characters"); a schema's own message stands.
 */
function boundReason(issue: z.ZodError['issues'][number]): string | null {
  if (issue.code !== 'too_small' && issue.code !== 'too_big') return null;
  if (!/^Too (small|big):/.test(issue.message)) return null;
  const small = issue.code === 'too_small';
  const limit = Number(small ? issue.minimum : issue.maximum);
  const inclusive = issue.inclusive !== false;
  // .length(n): "exactly", whichever side it missed on.
  if ((issue as { exact?: boolean }).exact) {
    if (issue.origin === 'string') return `must be exactly ${limit} character${limit === 1 ? '' : 's'}`;
    if (issue.origin === 'array' || issue.origin === 'set') return `must have exactly ${limit} item${limit === 1 ? '' : 's'}`;
  }
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
  switch (issue.origin) {
    case 'string':
      return `must be ${small ? 'at least' : 'at most'} ${plural(inclusive ? limit : small ? limit + 1 : limit - 1, 'character')}`;
    case 'array':
    case 'set':
      return `must have ${small ? 'at least' : 'at most'} ${plural(inclusive ? limit : small ? limit + 1 : limit - 1, 'item')}`;
    case 'number':
    case 'int':
    case 'bigint':
      return `must be ${small ? (inclusive ? 'at least' : 'above') : inclusive ? 'at most' : 'below'} ${limit}`;
    default:
      return null;
  }
}

export function zodIssues(error: z.ZodError, value?: unknown, schema?: z.ZodType): ErrorIssue[] {
  return tightestMaxima(error.issues).flatMap((issue): ErrorIssue | ErrorIssue[] => {
    if (issue.code === 'invalid_value' && issue.path.length > 0 && valueAt(value, issue.path) === undefined) {
      return { path: formatPath(issue.path), reason: `required: one of ${issue.values.map((v) => JSON.stringify(v)).join('|')}` };
    }
    if (issue.code === 'invalid_type') {
      // zod says "Invalid input: expected string, received undefined"; say what is wanted instead.
      const received = /received (\w+)$/.exec(issue.message)?.[1];
      const wanted = typeWord(String(issue.expected));
      if (received === 'undefined') return { path: formatPath(issue.path), reason: `required: ${wanted}` };
      if (received) return { path: formatPath(issue.path), reason: `must be ${wanted}, not ${typeWord(received)}` };
    }
    const bound = boundReason(issue);
    if (bound) return { path: formatPath(issue.path), reason: bound };
    if (issue.code === 'unrecognized_keys') {
      // One issue per unknown key, at the key's own path: a client placing issues by field can place these too.
      const keys = (issue as { keys?: string[] }).keys ?? [];
      // A schema's own wording for its unknown keys (zod's default starts "Unrecognized key") stands for the keys it names.
      const own = issue.message.startsWith('Unrecognized key') ? null : issue.message;
      // With the schema, each key is told the declared one it likely meant ("max_cost" for max_cost_per_unit).
      const declared = schema ? keysDeclaredAt(schema, issue.path) : undefined;
      return keys.map((k) => {
        if (own !== null && (own.includes(`"${k}"`) || keys.length === 1)) return { path: formatPath([...issue.path, k]), reason: own };
        const meant = declared ? closest(k, declared) : undefined;
        return { path: formatPath([...issue.path, k]), reason: `unknown field "${k}"${meant ? ` (did you mean "${meant}"?)` : ''} not accepted` };
      });
    }
    if (issue.code === 'invalid_key') {
      // zod reports only "Invalid key in record"; the key schema's own message says what a key must be.
      const inner = ((issue as { issues?: Array<{ message: string }> }).issues ?? []).map((i) => i.message);
      return { path: formatPath(issue.path), reason: `key ${JSON.stringify(String(issue.path[issue.path.length - 1]))} not accepted${inner.length ? `: ${inner.join('; ')}` : ''}` };
    }
    return { path: formatPath(issue.path), reason: issue.message };
  });
}

/**
 * The one validation helper used at every boundary: parses `value` with `schema`, or throws a 400
 * carrying `issues` (path and reason for each), a `hint` and an `example` that passes.
 */
export function validate<S extends z.ZodType>(schema: S, value: unknown, opts: ValidationOptions = {}): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const where = opts.where ?? 'body';
  throw validationFailed(where, zodIssues(parsed.error, value, schema), opts.hint ?? fixHint(where, opts.example), opts.example);
}

/** The hint of a validation failure whose route gave none: fix the issues, and the example passes when there is one. */
const fixHint = (where: string, example: unknown): string => `Fix the fields listed in issues${example !== undefined ? `; example shows a request ${where} that passes` : ''}.`;

/** The 400 of a request part that failed validation, its first issue in the message. */
export function validationFailed(where: string, issues: ErrorIssue[], hint: string, example?: unknown): ApiError {
  const first = issues[0];
  const summary = first ? `${first.path}: ${first.reason}` : 'invalid';
  return new ApiError('validation_error', `Request ${where} failed validation (${summary}).`, { issues, hint, ...(example !== undefined ? { example } : {}) });
}

type SchemaDef = { type?: string; innerType?: unknown; in?: unknown; shape?: Record<string, unknown>; element?: unknown; valueType?: unknown };
const defOf = (s: unknown): SchemaDef | undefined => (s as { _zod?: { def?: SchemaDef } } | undefined)?._zod?.def;

/** A schema past its wrappers (optional, nullable, default, readonly, a pipe's input). */
function unwrapped(s: unknown): unknown {
  let cur = s;
  for (let i = 0; i < 16; i++) {
    const def = defOf(cur);
    if (def && ['optional', 'nullable', 'default', 'readonly', 'prefault', 'catch'].includes(def.type ?? '')) cur = def.innerType;
    else if (def?.type === 'pipe') cur = def.in;
    else return cur;
  }
  return cur;
}

/** The keys the object schema at `path` declares, if the path leads to one through objects, arrays and records. */
export function keysDeclaredAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] | undefined {
  let cur = unwrapped(schema);
  for (const seg of path) {
    const def = defOf(cur);
    if (def?.type === 'object' && def.shape && typeof seg === 'string') cur = unwrapped(def.shape[seg]);
    else if (def?.type === 'array') cur = unwrapped(def.element);
    else if (def?.type === 'record') cur = unwrapped(def.valueType);
    else return undefined;
  }
  const def = defOf(cur);
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : undefined;
}

/** The declared name (lower case) a misspelt one most likely meant: the same letters without case and separators, else one or two edits away. */
export function closest(name: string, known: readonly string[]): string | undefined {
  const bare = (k: string) => k.toLowerCase().replace(/[^a-z0-9]/g, '');
  const same = known.find((k) => bare(k) === bare(name));
  if (same) return same;
  // A name cut short ("max_cost" for max_cost_per_unit): the one declared name it begins.
  const begun = bare(name).length >= 4 ? known.filter((k) => bare(k).startsWith(bare(name))) : [];
  if (begun.length === 1) return begun[0];
  let best: { key: string; d: number } | undefined;
  for (const k of known) {
    const d = distance(name.toLowerCase(), k);
    if (d <= Math.min(2, Math.floor(k.length / 3)) && (!best || d < best.d)) best = { key: k, d };
  }
  return best?.key;
}

/**
 * Validates a query string against a route's schema, refusing parameters it does not declare: a
 * misspelt filter (`builtin=true` for `built_in`) would otherwise be ignored and the unfiltered
 * answer taken for the filtered one. Each unknown name is an issue, with the name it likely meant.
 */
export function validateQuery<S extends z.ZodType>(schema: S, query: Record<string, unknown>, opts: Omit<ValidationOptions, 'where'> = {}): z.output<S> {
  // The parameter names the query schema declares (an object's keys, through a pipe); undefined when it declares none by name.
  const known = keysDeclaredAt(schema, []);
  const unknown = known ? Object.keys(query).filter((k) => !known.includes(k)) : [];
  if (unknown.length && known) {
    const accepted = known.length ? `accepted: ${known.join(', ')}` : 'this route takes none';
    const issues = unknown.map((k) => {
      const meant = closest(k, known);
      return { path: k, reason: `unknown query parameter${meant ? `; did you mean "${meant}"?` : ''} (${accepted})` };
    });
    // The declared parameters' own problems too, as a body's are all reported at once: one round trip fixes them all.
    const declared = Object.fromEntries(Object.entries(query).filter(([k]) => !unknown.includes(k)));
    const checked = schema.safeParse(declared);
    const more = checked.success ? [] : zodIssues(checked.error, declared, schema);
    throw validationFailed('query', [...issues, ...more], opts.hint ?? `Correct or remove the query parameters listed in issues; ${accepted}.`);
  }
  const parsed = schema.safeParse(query);
  if (parsed.success) return parsed.data;
  // A parameter sent twice (limit=1&limit=2) arrives as an array: its issue says so, rather than "must be a string, not an
  // array" or an option list that holds both values sent. One that takes several (tag) has its issues at an element's path.
  const issues = zodIssues(parsed.error, query, schema).map((i) => {
    const sent = query[i.path];
    return Array.isArray(sent) ? { path: i.path, reason: `sent ${sent.length} times (${sent.map((v) => `${i.path}=${String(v)}`).join('&')}); send it once` } : i;
  });
  throw validationFailed('query', issues, opts.hint ?? fixHint('query', opts.example), opts.example);
}

