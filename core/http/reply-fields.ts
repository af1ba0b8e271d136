import { z } from 'zod';

/**
 * Fields the kernel and its decorators add to many answers, described once for every route's
 * response schema in the OpenAPI document.
 */

export const requestIdField = z.string().describe("This request's id (req_…), as in X-Request-Id.");

/** Added by the discovery plugin's notices decorator (docs/agents.md, "Notices"). */
export const noticesField = z
  .array(
    z.object({
      id: z.string().describe("The changelog entry's id."),
      date: z.string().describe('Its date.'),
      title: z.string().describe('Its title.'),
      summary: z.string().describe('What changed, in a sentence or two.'),
      link: z.string().describe('Where it is described.'),
    }),
  )
  .optional()
  .describe('API keys only: up to NOTICES_PER_RESPONSE agent changelog entries not yet shown to this key, newest first (their count in X-Service-Notices).');

/** The envelope every list answers in (core/pagination.ts `listEnvelope`), around `item`. */
export function listEnvelopeSchema<T extends z.ZodType>(item: T, what: string) {
  return z.object({
    object: z.literal('list'),
    data: z.array(item).describe(what),
    has_more: z.boolean().describe('Whether a next page exists.'),
    next_cursor: z.string().nullable().describe('Send it as `cursor` for the next page; null on the last one.'),
    limit: z.number().int().describe('The page size used.'),
  });
}

/** One request an answer offers as its next step (`next`): what it does, its method, its path, and what else it carries. */
export function nextRequestSchema<A extends string, M extends string, E extends z.ZodRawShape>(action: A, method: M, path: string, extra: E) {
  return z.object({
    action: z.literal(action).describe('What the request does.'),
    method: z.literal(method).describe('Its HTTP method.'),
    path: z.string().describe(path),
    ...extra,
  });
}
