import { genericUserAgentPart } from './generic-user-agents';
import { z } from 'zod';
import { listQuery } from '../../core/pagination';

export const CHANNELS = ['api', 'mcp', 'demo'] as const;
export const CLASSIFICATIONS = ['mine', 'testers', 'others'] as const;
export const OUTCOMES = ['accepted', 'rejected'] as const;
export const PAID_VIA = ['x402', 'day_pass', 'balance'] as const;
export const AI_FEATURES = ['agent_generation', 'task_estimation'] as const;
/** The AI features this service runs, which write AI-feature usage: none yet, so a summary's zeros say "not offered", not "unused". */
export const AI_FEATURES_OFFERED: ReadonlyArray<(typeof AI_FEATURES)[number]> = [];
export const KEY_SOURCES = ['own_provider_key', 'platform_key'] as const;
/** The operations the recorder writes (UsageEventInput.operation). */
/**
 * The kinds of call that write a usage event. A function's test run (POST /api/functions/{id}/test)
 * writes none: it is free and routes nothing (the table's CHECK still allows 'test', unused).
 */
export const OPERATIONS = ['compute', 'batch_item', 'router', 'demo', 'verify'] as const;

export type Channel = (typeof CHANNELS)[number];
export type Classification = (typeof CLASSIFICATIONS)[number];
export type Outcome = (typeof OUTCOMES)[number];
export type PaidVia = (typeof PAID_VIA)[number];
/** What the recorder writes and the `operation` filter takes: one list. */
export type Operation = (typeof OPERATIONS)[number];

/** A usage event id as the recorder issues it; anything else simply matches nothing (404). */
export const eventParams = z.strictObject({ id: z.string().min(1).max(100) });

/** The query of a route that takes no parameters: any one sent is refused, as the list refuses unknown ones. */
export const noQuery = z.strictObject({});


/** A date-time whose offset's '+' became a space: a query string decodes an unencoded '+' so. */
const PLUS_AS_SPACE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)? \d{2}(?::?\d{2})?$/;

/** A date-time without its offset: which instant it means depends on a time zone the service cannot know. */
const NO_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;

function instantReason(input: unknown): string {
  if (typeof input === 'string' && PLUS_AS_SPACE.test(input)) return `a '+' in a query string arrives as a space: send it as %2B (${input.replace(' ', '%2B')})`;
  if (typeof input === 'string' && NO_OFFSET.test(input)) return `a date-time needs its time zone: add Z for UTC (${input}Z) or an offset such as %2B02:00`;
  return 'must be an ISO 8601 date-time such as 2026-01-31T00:00:00Z, or a date such as 2026-01-31';
}

/** An instant: an ISO 8601 date-time with offset (seconds optional), or a date (midnight UTC). */
const instant = z
  .union([z.iso.datetime({ offset: true }), z.iso.datetime({ offset: true, precision: -1 }), z.iso.date()], { error: (iss) => instantReason(iss.input) })
  // The bound is compared as a JavaScript time: finer digits would be cut silently (from inclusive no more).
  .refine((v) => !/\.\d{4,}/.test(v), 'at most 3 decimals on the seconds (milliseconds)')
  .transform((v) => new Date(v.length === 10 ? `${v}T00:00:00Z` : v));

/** Runs even when a bound was refused (zod checks the object after its fields): such a bound is still the string sent. */
function orderedRange(q: { from?: Date | undefined; to?: Date | undefined }, ctx: z.RefinementCtx): void {
  if (q.from instanceof Date && q.to instanceof Date && q.from.getTime() >= q.to.getTime()) ctx.addIssue({ code: 'custom', path: ['to'], message: `must be later than from (${q.from.toISOString()})` });
}

export const eventsQuery = z
  .strictObject({
    ...listQuery,
    from: instant.optional().describe('Events at or after this instant.'),
    to: instant.optional().describe('Events before this instant.'),
    channel: z.enum(CHANNELS).optional(),
    classification: z.enum(CLASSIFICATIONS).optional().describe('Relative to your workspace: mine, testers or others.'),
    function: z.string().min(1).max(100).optional().describe('A function id or name: the function the event names, or one the call tried that failed before another answered.'),
    operation: z.enum(OPERATIONS, { error: (iss) => (iss.input === 'test' ? `a function's test run writes no usage event, so there is none to filter; one of ${OPERATIONS.join(', ')}` : undefined) }).optional().describe('The kind of call: compute, batch_item, router, demo or verify (a function\'s test run writes no usage event).'),
    request_id: z.string().min(1).max(128).optional().describe("The request id of a call's answer (its X-Request-Id); matches your own calls (mine) only, the only ones that show it."),
    agent_id: z.string().min(1).max(100).optional().describe('The agent whose key or token made the call (caller.agent_id); matches your own calls (mine) only, the only ones that show their caller.'),
    key_id: z.string().min(1).max(100).optional().describe('The API key that made the call (caller.key_id), an agent\'s key included; matches your own calls (mine) only, the only ones that show their caller.'),
    outcome: z.enum([...OUTCOMES, 'none']).optional().describe('accepted, rejected, or none (no outcome reported).'),
    paid_via: z.enum([...PAID_VIA, 'none']).optional().describe('x402, day_pass, balance, or none (not paid at call time).'),
  })
  .superRefine(orderedRange);
export type EventsQuery = z.output<typeof eventsQuery>;

export const summaryQuery = z
  .strictObject({
    from: instant.optional().describe('Default: the start of the current calendar month (UTC).'),
    to: instant.optional().describe('Default: now.'),
  })
  .superRefine(orderedRange);

export const outcomeBody = z.strictObject({
  outcome: z.enum(OUTCOMES).describe('accepted or rejected'),
  // Null is none, as absent: a read shows "quality_score": null, and sending that back is no error.
  quality_score: z.number().min(0).max(1).nullable().optional().describe('0 to 1; absent or null: none'),
});
export const outcomeExample = { outcome: 'accepted', quality_score: 0.9 };

export const MAX_TESTER_TAGS = 50;

const ipAddress = z.union([z.ipv4(), z.ipv6()], { error: 'must be an IPv4 or IPv6 address' });

const testerTag = z
  .strictObject({
    id: z.string().min(1).max(100).optional().describe('A tag returned by GET; with it, its masked address may be sent back unchanged to keep the address.'),
    label: z.string().trim().min(1).max(80),
    user_agent_contains: z
      .string()
      .trim()
      .min(4)
      .max(200)
      .nullable()
      .optional()
      .describe('Case-insensitive part of the User-Agent (at least 4 characters), one only your testers send: a part of a common client\'s User-Agent (a browser, curl, an HTTP library, an agent SDK) is refused, since it would label strangers\' calls.'),
    address: z.string().trim().min(1).max(64).nullable().optional().describe('The caller address (IPv4 or IPv6); only a hash of it is kept.'),
  })
  .superRefine((t, ctx) => {
    if (!t.user_agent_contains && !t.address) ctx.addIssue({ code: 'custom', path: ['user_agent_contains'], message: 'a tag needs user_agent_contains or address (or both)' });
    const generic = t.user_agent_contains ? genericUserAgentPart(t.user_agent_contains) : null;
    if (generic) {
      ctx.addIssue({
        code: 'custom',
        path: ['user_agent_contains'],
        message: `would match strangers' keyless calls: ${generic}; use a part only your testers send, with at least 4 letters of its own (such as "acme-qa-bot"), or match them by address`,
      });
    }
  });

export const testerTagsBody = z.strictObject({
  tags: z.array(testerTag).max(MAX_TESTER_TAGS).describe(`Replaces every tag; at most ${MAX_TESTER_TAGS}.`),
});
export type TesterTagsBody = z.output<typeof testerTagsBody>;
export const testerTagsExample = { tags: [{ label: 'QA bot', user_agent_contains: 'acme-qa-bot' }, { label: 'office', address: '203.0.113.7' }] };

/** Whether a string is an IP address as the tag schema accepts it. */
export function isIpAddress(value: string): boolean {
  return ipAddress.safeParse(value).success;
}
