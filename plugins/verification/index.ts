import type { Pool } from 'pg';
import type { PluginDefinition } from '../../core/plugin';
import { TOKENS } from '../../core/tokens';
import { USAGE } from '../usage';
import type { UsageRecorder } from '../usage';
import { verificationSchema } from './migrations/0001-verification-schema';
import { observationRoutes } from './routes/observations';
import { verifyRoutes } from './routes/verify';
import { OutcomeObserver } from './services/outcomes';
import { ObservationStore } from './services/observations';
import { VerificationService } from './services/verification';
import { VERIFICATION } from './tokens';

export { VERIFICATION } from './tokens';
export type { VerificationService, VerifyCall, VerifyResult } from './services/verification';
export type { ObservationStore, ObservationView } from './services/observations';
export { evaluateVerdict } from './services/verdict';
export type { VerdictInput, VerdictResult, VerdictThresholds, VerdictValue, Observation, Band, Reference, Independence } from './services/verdict';
export { verifyBody, verifyExample, ALIAS_MISSING_MESSAGE } from './schemas';

/**
 * Price verification: a proposed price judged against stored price observations (data
 * contributions and accepted compute outcomes) and the context's floor and ceiling, with the
 * evidence disclosed. Verification counts against a sandbox's daily limit and the demo budget.
 */
export const verificationPlugin: PluginDefinition = {
  name: 'verification',
  description: 'Price observations (contributions, accepted outcomes) and price verification verdicts.',
  dependsOn: ['identity', 'usage', 'pricing'],
  migrations: [verificationSchema],
  register(ctx) {
    const { config, sql, clock, container, hooks, events } = ctx;
    const store = new ObservationStore(sql, container.resolve<Pool>(TOKENS.PgPool), config.verification.evidenceCacheTtlMs, () => clock.now());
    const recorder = container.resolve<UsageRecorder>(USAGE.Recorder);
    const service = new VerificationService(store, hooks, recorder, config, clock, ctx.publicUrl);
    container.register(VERIFICATION.Service, { useValue: service });
    container.register(VERIFICATION.Observations, { useValue: store });

    const observer = new OutcomeObserver(store, ctx.log);
    events.on('usage.outcome_recorded', 'verification', (e) => observer.handle(e));

    for (const route of [...observationRoutes(store, () => clock.now()), ...verifyRoutes(service)]) ctx.route(route);
  },
};
