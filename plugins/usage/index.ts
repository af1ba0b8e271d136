import type { Pool } from 'pg';
import type { PluginDefinition } from '../../core/plugin';
import { TOKENS } from '../../core/tokens';
import { IDENTITY } from '../identity';
import type { Workspaces } from '../identity';
import { usageEvents } from './migrations/0001-usage-events';
import { usageApi } from './migrations/0002-usage-api';
import { usageNetworkEvidence } from './migrations/0003-network-evidence';
import { usageComputeIdempotencyKeys } from './migrations/0004-compute-idempotency-keys';
import { usageReplayedKeys } from './migrations/0005-replayed-keys';
import { usageBatchKeys } from './migrations/0006-batch-keys';
import { usageRequestIdIndex } from './migrations/0007-request-id-index';
import { usageFailedFunctionIds } from './migrations/0008-failed-function-ids';
import { usageExactPrices } from './migrations/0009-exact-prices';
import { usageFailedFunctionsIndex } from './migrations/0010-failed-functions-index';
import { eventRoutes } from './routes/events';
import { summaryRoutes } from './routes/summary';
import { testerTagRoutes } from './routes/tester-tags';
import { SandboxAllowance } from './services/allowance';
import { CallReplays } from './services/call-replays';
import { UsageEvents } from './services/events';
import { UsageRecorder } from './services/recorder';
import { UsageSummary } from './services/summary';
import { TesterTags } from './services/tester-tags';
import { USAGE } from './tokens';

export { USAGE } from './tokens';
export type { RecordedEvent, UsageRecorder, UsageEventInput, CallClaim } from './services/recorder';
export type { CallReplays, RecordedCall } from './services/call-replays';
export type { UsageEvents } from './services/events';
export { quotaNextSteps, sandboxQuotaRefusal } from './services/allowance';
export { addressHash } from '../../core/address';
export { keylessCallsSince } from './services/keyless-calls';
export { callerFields, contextKeys } from './services/caller';
export { receipt, receiptOfRow, remaining } from './services/reply';
export { isCallerGoneError } from './services/recorder';
export { receiptSchema, remainingSchema } from './responses';

/**
 * Usage records of every priced call (written before the response, grouped across requests), the
 * sandbox daily allowance, and the usage API: events classified relative to the viewer (mine,
 * testers, others), outcomes, the summary, and the tester tags of Settings.
 */
export const usagePlugin: PluginDefinition = {
  name: 'usage',
  description: 'Usage events, outcomes, summary, tester tags and the sandbox daily allowance.',
  dependsOn: ['identity'],
  migrations: [usageEvents, usageApi, usageNetworkEvidence, usageComputeIdempotencyKeys, usageReplayedKeys, usageBatchKeys, usageRequestIdIndex, usageFailedFunctionIds, usageExactPrices, usageFailedFunctionsIndex],
  async register(ctx) {
    const synchronousCommit = ctx.config.usage.synchronousCommit;
    if (!synchronousCommit) ctx.log.warn('USAGE_SYNCHRONOUS_COMMIT=off: usage events are acknowledged before their WAL record is on disk; a database crash can lose the last few hundred milliseconds of them');
    const claimTtlHours = ctx.config.limits.idempotencyKeyTtlHours;
    const pool = ctx.container.resolve<Pool>(TOKENS.PgPool);
    const recorder = new UsageRecorder(pool, ctx.log, { synchronousCommit, concurrentInserts: ctx.config.usage.concurrentInserts, claimTtlHours, undeliveredJournalDir: ctx.config.database.dataDir, failureLogIntervalMs: ctx.config.log.repeatIntervalMs });
    ctx.container.register(USAGE.Recorder, { useValue: recorder });
    ctx.container.register(USAGE.Replays, { useValue: new CallReplays(pool, ctx.clock, ctx.log, claimTtlHours) });
    const allowance = new SandboxAllowance(ctx.kv, ctx.clock, ctx.config, ctx.sql, ctx.log);
    ctx.hooks.addAdmitter(allowance);
    ctx.onClose(() => allowance.close());
    ctx.onClose(() => recorder.close());

    // Others are calls to a workspace's own functions; they exist only where the pricing plugin's table does.
    const functions = await ctx.sql.one<{ present: boolean }>("SELECT to_regclass('pricing_functions') IS NOT NULL AS present");
    const events = new UsageEvents(ctx.sql, functions?.present === true);
    ctx.container.register(USAGE.Events, { useValue: events });
    const routes = [
      ...eventRoutes({ events, bus: ctx.events, clock: ctx.clock, hooks: ctx.hooks }),
      ...summaryRoutes({ summary: new UsageSummary(ctx.sql), clock: ctx.clock }),
      ...testerTagRoutes({ tags: new TesterTags(ctx.sql), workspaces: ctx.container.resolve<Workspaces>(IDENTITY.Workspaces) }),
    ];
    for (const r of routes) ctx.route(r);
  },
};

declare module '../../core/events' {
  interface DomainEvents {
    /** A caller reported what became of a priced call (PATCH /api/usage/events/{id}/outcome). */
    'usage.outcome_recorded': {
      eventId: string;
      workspaceId: string;
      outcome: 'accepted' | 'rejected';
      qualityScore: number | null;
      functionId: string | null;
      functionName: string | null;
      price: string | null;
      currency: string | null;
      contextKeys: Record<string, unknown>;
      /** The price was positioned on the network's price observations. */
      networkEvidence: boolean;
      /** When the outcome was reported. */
      at: string;
      /** When the call that quoted the price was made (the event's created_at): when the price held. */
      calledAt: string;
    };
  }
}
