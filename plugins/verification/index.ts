import type { Pool } from 'pg';
import type { PluginDefinition } from '../../core/plugin';
import type { FunctionRegistry } from '../../engine';
import { TOKENS } from '../../core/tokens';
import type { RouteTable } from '../../core/http/pipeline';
import { PRICING } from '../pricing';
import type { CallSchemas, MarketEvidenceSlot } from '../pricing';
import { USAGE } from '../usage';
import type { CallReplays, UsageRecorder } from '../usage';
import { verificationSchema } from './migrations/0001-verification-schema';
import { verificationObservedAtIndex } from './migrations/0002-observations-observed-at';
import { observationRoutes } from './routes/observations';
import { verifyRoutes } from './routes/verify';
import { OutcomeObserver } from './services/outcomes';
import { NetworkMarketEvidence } from './services/market-evidence';
import { ObservationStore } from './services/observations';
import { ObservationLimits } from './services/observation-limits';
import { ObservedProductTypes } from './services/product-types';
import { VerificationService } from './services/verification';
import { verifyBodyOf } from './schemas';
import { VERIFICATION } from './tokens';

export { VERIFICATION } from './tokens';
export type { VerificationService, VerifyCall, VerifyResult } from './services/verification';
export type { ObservationStore, ObservationView } from './services/observations';
export { evaluateVerdict } from './services/verdict';
export type { VerdictInput, VerdictResult, VerdictThresholds, VerdictValue, Observation, Band, Reference, Independence } from './services/verdict';
export { verifyBodyOf, verifyExample, ALIAS_MISSING_MESSAGE } from './schemas';
export { verifyExampleFor } from './routes/verify-example';
export type { VerifyBody, VerifyBodySchema } from './schemas';

/**
 * Price verification: a proposed price judged against stored price observations (data
 * contributions and accepted compute outcomes) and the context's floor and ceiling, with the
 * evidence disclosed. Verification counts against a sandbox's daily limit and the demo budget.
 */
export const verificationPlugin: PluginDefinition = {
  name: 'verification',
  description: 'Price observations (contributions, accepted outcomes) and price verification verdicts.',
  dependsOn: ['identity', 'usage', 'pricing'],
  migrations: [verificationSchema, verificationObservedAtIndex],
  async register(ctx) {
    const { config, sql, kv, clock, container, hooks, events } = ctx;
    const store = new ObservationStore(
      sql,
      container.resolve<Pool>(TOKENS.PgPool),
      { ttlMs: config.verification.evidenceCacheTtlMs, maxObservations: config.verification.evidenceCacheMaxObservations, maxAccounts: config.identity.credentialCacheMaxEntries },
      () => clock.now(),
    );
    const recorder = container.resolve<UsageRecorder>(USAGE.Recorder);
    const verdicts = ctx.metrics.counter({ name: 'price_verifications_total', help: 'Price verifications answered, by verdict (reasonable, high, low, unknown) and channel (api, mcp, demo).', labelNames: ['verdict', 'channel'] });
    // Every verdict's series exists from the start, so a share of unknown verdicts reads 0 rather than no data.
    for (const verdict of ['reasonable', 'high', 'low', 'unknown']) for (const channel of ['api', 'mcp', 'demo']) verdicts.inc({ verdict, channel }, 0);
    const routeTable = container.resolve<RouteTable>(TOKENS.Routes);
    const service = new VerificationService(store, hooks, recorder, config, clock, ctx.publicUrl, container.resolve<FunctionRegistry>(PRICING.Registry), (verdict, channel) => verdicts.inc({ verdict, channel }), container.resolve<CallReplays>(USAGE.Replays), kv, (ip) => {
      // The registration route's own rule (paused, or this address's registrations spent): an in-process lookup.
      const register = routeTable.find('agents.register');
      return register !== undefined && !register.closed?.(ip);
    });
    container.register(VERIFICATION.Service, { useValue: service });
    container.register(VERIFICATION.Observations, { useValue: store });
    // Compute positions against the same observations a verdict is judged on.
    if (config.engine.marketEvidence) {
      const observed = new ObservedProductTypes(container.resolve<Pool>(TOKENS.PgPool), { refreshMs: config.engine.marketIndexRefreshMs, max: config.engine.marketIndexMax, maxAgeDays: config.verification.maxAgeDays }, ctx.log, () => clock.now());
      store.onWrite((productType, currency) => observed.add(productType, currency));
      ctx.onClose(() => observed.stop());
      await observed.start();
      container.resolve<MarketEvidenceSlot>(PRICING.MarketEvidence).provide(new NetworkMarketEvidence(store, observed, config, () => clock.now()));
    }

    const v = config.verification;
    const limits = new ObservationLimits(sql, kv, clock, ctx.log, v.observationsPerDay, v.observationRetentionDays);
    const observer = new OutcomeObserver(store, ctx.log);
    events.on('usage.outcome_recorded', 'verification', (e) => {
      // Accepted outcomes add observations too: a network that only computes also prunes.
      limits.poke();
      return observer.handle(e);
    });

    const routes = observationRoutes(store, limits, () => clock.now(), { maxAgeDays: v.maxAgeDays, maxPerRequest: v.observationsMaxPerRequest, retentionDays: v.observationRetentionDays });
    const verifyBody = verifyBodyOf(container.resolve<CallSchemas>(PRICING.Schemas).context);
    for (const route of [...routes, ...verifyRoutes(service, verifyBody)]) ctx.route(route);
  },
};
