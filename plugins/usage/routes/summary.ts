import type { Clock } from '../../../core/clock';
import { ApiError } from '../../../core/errors';
import { defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
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
      handler: async ({ principal, query }) => {
        const now = d.clock.now();
        const from = query.from ?? monthOf(now).from;
        const to = query.to ?? new Date(now);
        if (from.getTime() >= to.getTime()) {
          throw new ApiError('validation_error', 'Request query failed validation (from: must be earlier than to).', {
            issues: [{ path: query.from ? 'from' : 'to', reason: `must be earlier than to (${to.toISOString()})` }],
            hint: 'from defaults to the start of this calendar month (UTC) and to to now; send both to choose another period.',
          });
        }
        return ok(await d.summary.summarize(principalOf(principal).workspaceId, from, to, now));
      },
    }),
  ];
}
