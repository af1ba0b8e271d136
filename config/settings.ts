import { z } from 'zod';
import { isIpLiteral } from '../core/outbound/address-policy';

/**
 * One place declares every setting: its environment variable, its schema, its default and a line
 * of documentation. The loader, the config type and the README table are all derived from it, so
 * they cannot disagree.
 */
export interface SettingDef<T> {
  readonly kind: 'setting';
  readonly env: string;
  readonly schema: z.ZodType<T>;
  readonly default: T;
  readonly doc: string;
  /** Turns the raw environment string into the value the schema checks. */
  readonly fromEnv: (raw: string) => unknown;
  readonly secret: boolean;
}

interface Options {
  secret?: boolean;
}

function def<T>(env: string, schema: z.ZodType<T>, dflt: T, doc: string, fromEnv: (raw: string) => unknown, opts: Options = {}): SettingDef<T> {
  return { kind: 'setting', env, schema, default: dflt, doc, fromEnv, secret: opts.secret ?? false };
}

const trimmed = (raw: string): string => raw.trim();

/**
 * Longest delay setTimeout and setInterval honour (2^31-1 ms, about 24.8 days): Node runs a longer
 * one after 1 ms, so a setting that ends in a timer takes this as its maximum.
 */
export const MAX_TIMER_MS = 2_147_483_647;

/** A message for a value of the wrong type only; other issues (bounds) keep their own wording. */
const typeMessage =
  (message: string) =>
  (issue: { code?: string }): string | undefined =>
    issue.code === 'invalid_type' ? message : undefined;

/**
 * The longest duration a setting named in a unit may hold unless it says otherwise: a Node timer's
 * longest wait for milliseconds (longer ones fire at once, with a warning), and a hundred years for
 * seconds, hours and days, so an expiry computed from it is still a date (a JavaScript Date ends
 * at 275760, and one past it writes NaN-NaN-NaN to the database).
 */
const DURATION_CAPS: Array<[RegExp, number]> = [
  [/_MS$/, MAX_TIMER_MS],
  [/_S$/, 100 * 365 * 86_400],
  [/_HOURS$/, 100 * 365 * 24],
  [/_DAYS$/, 100 * 365],
];

const durationCap = (env: string): number | undefined => DURATION_CAPS.find(([unit]) => unit.test(env))?.[1];

/**
 * Digits as a number, unless there are too many to be kept exactly (past Number.MAX_SAFE_INTEGER): those stay as
 * typed, so the refusal echoes what the operator wrote rather than its rounding (1e20 for twenty nines).
 */
function wholeFromEnv(raw: string): unknown {
  const v = raw.trim();
  return /^-?\d+$/.test(v) && Number.isSafeInteger(Number(v)) ? Number(v) : raw;
}

/** What a whole-number setting says of a value that is not one: digits kept as typed are too large (or small) for it. */
const wholeMessage =
  (min: number | undefined, max: number | undefined) =>
  (issue: { code?: string; input?: unknown }): string | undefined => {
    if (issue.code !== 'invalid_type') return undefined;
    const typed = typeof issue.input === 'string' ? issue.input.trim() : '';
    if (/^\d+$/.test(typed)) return `is too large: must be at most ${max ?? Number.MAX_SAFE_INTEGER}`;
    if (/^-\d+$/.test(typed)) return `is too small: must be at least ${min ?? Number.MIN_SAFE_INTEGER}`;
    return 'must be a whole number';
  };

export function int(env: string, dflt: number, doc: string, range: { min?: number; max?: number } = {}): SettingDef<number> {
  const max = range.max ?? durationCap(env);
  let schema = z.number({ error: wholeMessage(range.min, max) }).int({ message: 'must be a whole number' });
  if (range.min !== undefined) schema = schema.min(range.min);
  if (max !== undefined) schema = schema.max(max);
  return def(env, schema, dflt, doc, wholeFromEnv);
}

export function num(env: string, dflt: number, doc: string, range: { min?: number; max?: number } = {}): SettingDef<number> {
  let schema = z.number({ error: typeMessage('must be a number') });
  const max = range.max ?? durationCap(env);
  if (range.min !== undefined) schema = schema.min(range.min);
  if (max !== undefined) schema = schema.max(max);
  return def(env, schema, dflt, doc, (raw) => (raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw));
}

const BOOLEAN_MESSAGE = 'must be true or false (also 1/0, yes/no, on/off)';

function parseBoolean(raw: string): boolean | string {
  const v = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  return raw;
}

export function bool(env: string, dflt: boolean, doc: string): SettingDef<boolean> {
  return def(env, z.boolean({ error: typeMessage(BOOLEAN_MESSAGE) }), dflt, doc, parseBoolean);
}

/** A yes or no that may be left unset, for a default another setting decides (the doc says which). */
export function optBool(env: string, doc: string): SettingDef<boolean | undefined> {
  return def<boolean | undefined>(env, z.boolean({ error: typeMessage(BOOLEAN_MESSAGE) }).optional(), undefined, doc, (raw) => (raw.trim() === '' ? undefined : parseBoolean(raw)));
}

export function str(env: string, dflt: string, doc: string, opts: Options & { pattern?: RegExp } = {}): SettingDef<string> {
  let schema = z.string().min(1);
  if (opts.pattern) schema = schema.regex(opts.pattern);
  return def(env, schema, dflt, doc, trimmed, opts);
}

/**
 * A check of a setting's value: `test` and one `message`, or `problem`, which says what is wrong with this value
 * (undefined when nothing is), for a setting whose values can be wrong in several ways worth telling apart.
 */
type StrCheck = { test: (v: string) => boolean; message: string } | { problem: (v: string) => string | undefined };

export function optStr(env: string, doc: string, opts: Options & { url?: boolean; minLength?: number; check?: StrCheck } = {}): SettingDef<string | undefined> {
  let base: z.ZodType<string> = opts.url ? z.string().url() : z.string().min(opts.minLength ?? 1, { message: `must be at least ${opts.minLength ?? 1} characters` });
  const check = opts.check;
  if (check && 'test' in check) base = base.refine(check.test, { message: check.message });
  else if (check) {
    base = base.superRefine((v, ctx) => {
      const message = check.problem(v);
      if (message !== undefined) ctx.addIssue({ code: 'custom', message });
    });
  }
  return def<string | undefined>(env, base.optional(), undefined, doc, (raw) => (raw.trim() === '' ? undefined : raw.trim()), opts);
}

export function optInt(env: string, doc: string): SettingDef<number | undefined> {
  return def<number | undefined>(env, z.number({ error: wholeMessage(undefined, undefined) }).int().optional(), undefined, doc, (raw) => (raw.trim() === '' ? undefined : wholeFromEnv(raw)));
}

export function oneOf<const T extends readonly [string, ...string[]]>(env: string, values: T, dflt: T[number], doc: string): SettingDef<T[number]> {
  return def(env, z.enum(values) as unknown as z.ZodType<T[number]>, dflt, doc, trimmed);
}

/**
 * A comma-separated list; `item`, when given, checks each entry (`message` says what an entry must be) and may
 * rewrite an accepted entry to the form it is compared in (`normalize`); `nonEmpty` refuses a list of nothing.
 */
export function list(
  env: string,
  dflt: string[],
  doc: string,
  item?: { check: (entry: string) => boolean; message: string; normalize?: (entry: string) => string; nonEmpty?: string },
): SettingDef<string[]> {
  const checked = item ? z.string().min(1).refine(item.check, { message: item.message }) : z.string().min(1);
  const normalize = item?.normalize;
  const entries = z.array(normalize ? checked.transform(normalize) : checked);
  const schema = item?.nonEmpty ? entries.min(1, { message: item.nonEmpty }) : entries;
  return def(env, schema as unknown as z.ZodType<string[]>, dflt, doc, (raw) =>
    raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
}

/**
 * A full IP address, alone or with a range: a prefix length from `minPrefix`, or (IPv4, when
 * `netmask`) a dotted netmask. Without brackets, as the outbound guard's and Express's parsers take
 * an address ([::1] is a URL's form).
 */
function isAddressRange(entry: string, opts: { minPrefix: number; netmask: boolean }): boolean {
  const [address = '', range, ...rest] = entry.split('/');
  if (rest.length > 0 || address.startsWith('[') || !isIpLiteral(address)) return false;
  if (range === undefined) return true;
  const bits = address.includes(':') ? 128 : 32;
  if (/^\d+$/.test(range)) return Number(range) >= opts.minPrefix && Number(range) <= bits;
  return opts.netmask && bits === 32 && !range.includes(':') && isIpLiteral(range);
}

/** A full IP address, or one with a prefix length (CIDR). */
export const isAddressOrCidr = (entry: string): boolean => isAddressRange(entry, { minPrefix: 0, netmask: false });

/** A TCP port, 1 to 65535. */
export const isPort = (entry: string): boolean => /^\d+$/.test(entry) && Number(entry) >= 1 && Number(entry) <= 65535;

/** A web origin: scheme://host[:port], with at most a trailing slash (no credentials, path, query or fragment). */
export function isOrigin(entry: string): boolean {
  try {
    const u = new URL(entry);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.username === '' && u.password === '' && u.pathname === '/' && !/[?#]/.test(entry);
  } catch {
    return false;
  }
}

/** An origin as browsers send it in Origin (host in lower case, no default port, no slash); `*` stays. */
export const browserOrigin = (entry: string): string => (entry === '*' ? entry : new URL(entry).origin);

const POSTGRES_URL_TAKES = 'must be a postgres:// or postgresql:// URL';

/**
 * What is wrong with a PostgreSQL connection URL (postgres:// or postgresql://; a unix socket as
 * `postgresql:///db?host=/run/postgresql`), undefined when nothing is. new URL does not decode the user, password
 * and database, which Sequelize does (decodeURIComponent): a stray % there ended the start with a URIError.
 */
export function postgresUrlProblem(entry: string): string | undefined {
  let u: URL;
  try {
    u = new URL(entry);
  } catch {
    return POSTGRES_URL_TAKES;
  }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') return POSTGRES_URL_TAKES;
  const bad = undecodedParts(u).map((part) => (part === 'path' ? 'database name' : part));
  if (bad.length > 0) return `${POSTGRES_URL_TAKES} whose user, password and database name are percent-encoded: its ${bad.join(' and ')} ${bad.length > 1 ? 'are' : 'is'} not (write a % in them as %25)`;
  return undefined;
}

/**
 * Which of a URL's user, password and path does not percent-decode (a % not followed by two hex digits): the
 * Redis and PostgreSQL clients decode them with decodeURIComponent, whose URIError would end the start with a stack.
 */
export function undecodedParts(u: URL): string[] {
  const parts: Array<[string, string]> = [
    ['user', u.username],
    ['password', u.password],
    ['path', u.pathname],
  ];
  return parts
    .filter(([, part]) => {
      try {
        decodeURIComponent(part);
        return false;
      } catch {
        return true;
      }
    })
    .map(([name]) => name);
}

const REDIS_URL_TAKES = 'must be a redis:// or rediss:// URL with a host, a port from 1 to 65535 and a database number as its path (such as redis://127.0.0.1:6379/0), or the absolute path of a Unix socket';

/**
 * What is wrong with a REDIS_URL, in the words of what it takes; undefined when ioredis reads it as meant. ioredis
 * throws at start on a URL that does not parse (a port above 65535) and sends SELECT NaN for a database that is
 * not a number, which Redis refuses with an error nothing handles; a database above the server's count is only
 * known to the server, so that one is refused at connect (core/service.ts).
 */
export function redisUrlProblem(entry: string): string | undefined {
  if (/\s/.test(entry)) return REDIS_URL_TAKES;
  let db: string | null;
  if (entry.startsWith('/') && !entry.startsWith('//')) {
    // A Unix socket; ioredis takes options (db among them) after a ?.
    const query = entry.indexOf('?');
    db = query === -1 ? null : new URLSearchParams(entry.slice(query + 1)).get('db');
  } else {
    if (!/^rediss?:\/\//i.test(entry)) return REDIS_URL_TAKES;
    let u: URL;
    try {
      u = new URL(entry);
    } catch {
      return `${REDIS_URL_TAKES}; this one is not a URL (a port above 65535 or not a number, say)`;
    }
    if (u.hostname === '') return `${REDIS_URL_TAKES}; this one names no host`;
    if (u.port !== '' && !isPort(u.port)) return `${REDIS_URL_TAKES}; its port ${u.port} is not from 1 to 65535`;
    const bad = undecodedParts(u);
    if (bad.length > 0) return `${REDIS_URL_TAKES}; its ${bad.join(' and ')} ${bad.length > 1 ? 'are' : 'is'} not valid percent-encoding (write a % in them as %25)`;
    const path = u.pathname.replace(/^\//, '');
    db = path !== '' ? path : u.searchParams.get('db');
  }
  if (db !== null && !/^\d+$/.test(db)) return `${REDIS_URL_TAKES}; its database must be a whole number of 0 or more (such as /0), not ${JSON.stringify(db)}`;
  return undefined;
}

/** A decimal amount kept as a string (money is never a float). */
export function decimal(env: string, dflt: string, doc: string): SettingDef<string> {
  return def(env, z.string().regex(/^\d+(\.\d+)?$/, 'must be a non-negative decimal such as 10 or 0.25'), dflt, doc, trimmed);
}

/** Express's trust-proxy value: all or nothing, a hop count, or the proxies' addresses and ranges. */
export type ProxyTrust = boolean | number | string[];

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * An entry Express (proxy-addr) reads as the operator meant it. proxy-addr also takes shorthand
 * IPv4 forms, so `1` would silently mean the address 0.0.0.1 rather than one hop: only full
 * addresses are accepted, with a prefix length or (IPv4) a dotted netmask.
 */
function isProxyEntry(entry: string): boolean {
  return PROXY_RANGE_NAMES.includes(entry) || isAddressRange(entry, { minPrefix: 1, netmask: true });
}

/**
 * The trust-proxy setting, typed as Express documents it: `true`/`false`, digits as a hop count,
 * anything else as a comma-separated list. Express would take the raw string as a list of addresses.
 */
export function proxyTrust(env: string, dflt: ProxyTrust, doc: string): SettingDef<ProxyTrust> {
  const schema = z.custom<ProxyTrust>(
    (v) =>
      typeof v === 'boolean' ||
      (typeof v === 'number' && Number.isInteger(v) && v >= 0) ||
      (Array.isArray(v) && v.length > 0 && v.every((e) => typeof e === 'string' && isProxyEntry(e))),
    { message: 'must be true, false, a hop count (digits only) or a comma-separated list of full IP addresses, CIDR ranges, loopback, linklocal or uniquelocal' },
  );
  return def<ProxyTrust>(env, schema, dflt, doc, (raw) => {
    const v = raw.trim();
    if (v.toLowerCase() === 'true') return true;
    if (v.toLowerCase() === 'false') return false;
    if (/^\d+$/.test(v)) return Number(v);
    return v.split(',').map((s) => s.trim());
  });
}

export type SettingsTree = { readonly [key: string]: SettingDef<unknown> | SettingsTree };

export function isSetting(node: SettingDef<unknown> | SettingsTree): node is SettingDef<unknown> {
  return (node as SettingDef<unknown>).kind === 'setting';
}

export type ConfigOf<T> = {
  readonly [K in keyof T]: T[K] extends SettingDef<infer V> ? V : ConfigOf<T[K]>;
};

/** Deep partial of a config, for programmatic overrides (tests, embedding). */
export type ConfigOverrides<T> = {
  [K in keyof T]?: T[K] extends readonly unknown[] ? T[K] : T[K] extends object ? ConfigOverrides<T[K]> : T[K];
};
