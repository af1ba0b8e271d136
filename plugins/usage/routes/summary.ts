import type { Clock } from '../../../core/clock';
import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { validationFailed } from '../../../core/validation';
import { summaryResponse } from '../responses';
import * as s from '../schemas';
import { monthOf } from '../services/summary';
import type { UsageSummary } from '../services/summary';
import { USAGE_CREDENTIALS, USAGE_TAGS, principalOf } from './events';

export function summaryRoutes(d: { summary: UsageSummary; clock: Clock }): RouteSpec[] {
  return [
    defineRoute({
      id: 'usage.summary',
      method: 'get',
      path: '/api/usage/summary',
      summary: 'Your usage over a period (default: this calendar month): requests, prepaid and billable cost, this month\'s billable cost, AI-feature usage.',
      tags: USAGE_TAGS,
      accepts: USAGE_CREDENTIALS,
      query: s.summaryQuery,
      responses: { 200: { description: 'The workspace\'s own calls over the period: counts, costs and AI-feature usage.', schema: summaryResponse } },
      handler: async ({ principal, query }) => {
        const now = d.clock.now();
        const from = query.from ?? monthOf(now).from;
        const to = query.to ?? new Date(now);
        // Both sent out of order is the schema's refusal; here one bound was sent and the other defaulted.
        if (from.getTime() >= to.getTime() && (query.from || query.to)) {
          const issue = query.from
            ? { path: 'from', reason: `must be earlier than to (${to.toISOString()}, now)` }
            : { path: 'to', reason: `must be later than from (${from.toISOString()}, the start of this month)` };
          throw validationFailed('query', [issue], 'from defaults to the start of this calendar month (UTC) and to to now; send both to choose another period.');
        }
        return ok(await d.summary.summarize(principalOf(principal).workspaceId, from, to, now));
      },
    }),
  ];
}
