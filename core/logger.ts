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
const SECRET_PATTERNS = [/\b(pk|sk|cs|pcs)_(live|test|sbx|agt|usr|oac)_[A-Za-z0-9]{16,}\b/g, /\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b/g];

export function scrubSecrets(text: string): string {
  return SECRET_PATTERNS.reduce((acc, re) => acc.replace(re, '[redacted]'), text);
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { service: 'pricing-compute' },
      redact: { paths: REDACT, censor: '[redacted]' },
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
