import type { Pool } from 'pg';
import type { PluginDefinition } from '../../core/plugin';
import { TOKENS } from '../../core/tokens';
import { usageEvents } from './migrations/0001-usage-events';
import { SandboxAllowance } from './services/allowance';
import { UsageRecorder } from './services/recorder';
import { USAGE } from './tokens';

export { USAGE } from './tokens';
export type { UsageRecorder, UsageEventInput } from './services/recorder';
export { quotaNextSteps } from './services/allowance';

/**
 * Usage records of every priced call (written before the response, grouped across requests) and
 * the sandbox daily allowance. The usage API over the records is added by the usage API issue.
 */
export const usagePlugin: PluginDefinition = {
  name: 'usage',
  description: 'Usage events and the sandbox daily allowance.',
  dependsOn: ['identity'],
  migrations: [usageEvents],
  register(ctx) {
    const synchronousCommit = ctx.config.usage.synchronousCommit;
    if (!synchronousCommit) ctx.log.warn('USAGE_SYNCHRONOUS_COMMIT=off: usage events are acknowledged before their WAL record is on disk; a database crash can lose the last few hundred milliseconds of them');
    const recorder = new UsageRecorder(ctx.container.resolve<Pool>(TOKENS.PgPool), ctx.log, { synchronousCommit });
    ctx.container.register(USAGE.Recorder, { useValue: recorder });
    ctx.hooks.addAdmitter(new SandboxAllowance(ctx.kv, ctx.clock, ctx.config));
    ctx.onClose(() => recorder.drainAll());
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
      at: string;
    };
  }
}
