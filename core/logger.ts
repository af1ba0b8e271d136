import { pino } from 'pino';
import type { Logger, DestinationStream } from 'pino';

export type { Logger };

/** Header names and fields whose values are secrets; they are never written to the log. */
const REDACT = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["payment-signature"]',
  'req.headers["x-payment"]',
  'headers["x-api-key"]',
  'headers.authorization',
  'headers.cookie',
  'headers["payment-signature"]',
  'headers["x-payment"]',
  '*.api_key',
  '*.apiKey',
  '*.key',
  '*.secret',
  '*.client_secret',
  '*.token',
  '*.access_token',
  '*.password',
  '*.signature',
];

/** Shapes of our own secrets, scrubbed from free-text messages as a second line of defence. */
// Keys, and the other one-time or bearer secrets the service issues: claim links, invitations, sessions, signing secrets.
const SECRET_PATTERNS = [/\b(pk|sk|cs|pcs)_(live|test|sbx|agt|usr|oac|clm|inv|ses|fsig)_[A-Za-z0-9]{16,}\b/g, /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b/g];

export function scrubSecrets(text: string): string {
  return SECRET_PATTERNS.reduce((acc, re) => acc.replace(re, '[redacted]'), text);
}

const STANDARD_ERROR_FIELDS = new Set(['type', 'message', 'stack', 'cause', 'aggregateErrors']);
/** The prototype of what pino makes of an error, which a nested error field also gets. */
const SERIALIZED_ERROR: unknown = Object.getPrototypeOf(pino.stdSerializers.err(new Error('prototype')));
const PLAIN: unknown[] = [null, Object.prototype, Array.prototype, Date.prototype, SERIALIZED_ERROR];

/**
 * pino's error serializer, without the objects an error drags along: node-postgres hangs its whole
 * client on a connection error (socket, parsed statements, the backend's cancel key), several KB a
 * line. An error's own data (code, detail, severity, nested plain values) is kept; a field holding an
 * instance of some class is written as its class name.
 */
export function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const out = pino.stdSerializers.err(err) as unknown as Record<string, unknown>;
  for (const [field, value] of Object.entries(out)) {
    if (STANDARD_ERROR_FIELDS.has(field) || value === null || typeof value !== 'object') continue;
    if (!PLAIN.includes(Object.getPrototypeOf(value))) out[field] = `[${(value as { constructor?: { name?: string } }).constructor?.name || 'object'}]`;
  }
  return out;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'pricing-compute' },
      redact: { paths: REDACT, censor: '[redacted]' },
      serializers: { err: serializeError },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((a) => (typeof a === 'string' ? scrubSecrets(a) : a)) as typeof args;
          method.apply(this, scrubbed);
        },
      },
    },
    destination,
  );
}

/**
 * An operational failure (a database or Redis that did not answer) as log fields: its reason and code, without the
 * stack a bug's report needs and an outage's does not.
 */
export function failureFields(err: unknown): { reason: string; code?: string } {
  const reason = err instanceof Error ? err.message || err.name : String(err);
  const code = (err as { code?: unknown } | null)?.code;
  return { reason, ...(typeof code === 'string' ? { code } : {}) };
}
