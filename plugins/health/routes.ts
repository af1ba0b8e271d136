import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ApiError, errorBodySchema } from '../../core/errors';
import { defineRoute, ok, HANDLED } from '../../core/http/route';
import type { HandlerResult, RouteSpec } from '../../core/http/route';
import type { PluginContext, ReadinessCheck } from '../../core/plugin';
import { TOKENS } from '../../core/tokens';

const READINESS_TIMEOUT_MS = 2000;

/** Whether an Authorization header carries exactly `token` as a Bearer credential (compared in constant time). */
function bearerIs(header: string | undefined, token: string): boolean {
  const sent = /^Bearer +(\S+) *$/i.exec(header ?? '')?.[1];
  if (sent === undefined) return false;
  // Digests of equal length, so neither the comparison's time nor an early length check tells how close a guess was.
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(sent), digest(token));
}

const healthBody = z.object({ status: z.literal('ok'), uptime_s: z.number() });
const readyBody = z.object({
  status: z.enum(['ready', 'not_ready']),
  checks: z.record(z.string(), z.object({ status: z.enum(['up', 'down']), ms: z.number(), error: z.string().optional() })),
  failing: z.array(z.string()).optional(),
});

async function runCheck(check: () => Promise<void>): Promise<{ status: 'up' | 'down'; ms: number; error?: string }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${READINESS_TIMEOUT_MS} ms`)), READINESS_TIMEOUT_MS);
      }),
    ]);
    return { status: 'up', ms: Math.round(performance.now() - start) };
  } catch (err) {
    // /readyz is public: the driver's message stays, its internal addresses do not.
    const said = ((err as Error).message || String(err)).replace(/\[?[0-9a-f]*[:.][0-9a-f:.]+\]?:\d+|\b\d{1,3}(?:\.\d{1,3}){3}\b/gi, '<address>');
    return { status: 'down', ms: Math.round(performance.now() - start), error: said };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `service_dependency_up{dependency}`: each readiness check (database, Redis when configured, the pricing pool's queue)
 * run at scrape time, 1 when it passed within READINESS_TIMEOUT_MS. An outage then shows as a series to alert on, not only as 503s.
 */
export function registerDependencyGauge(ctx: PluginContext): void {
  ctx.metrics.gauge({
    name: 'service_dependency_up',
    help: `Whether each check /readyz makes passed at scrape time (1) or not within ${READINESS_TIMEOUT_MS} ms (0): the database, Redis when REDIS_URL is set, the pricing pool's queue.`,
    labelNames: ['dependency'],
    async collect() {
      const entries = [...ctx.container.resolve<ReadonlyMap<string, ReadinessCheck>>(TOKENS.Readiness)];
      const results = await Promise.all(entries.map(async ([name, check]) => [name, await runCheck(check)] as const));
      for (const [name, result] of results) this.set({ dependency: name }, result.status === 'up' ? 1 : 0);
    },
  });
}

export function healthRoutes(ctx: PluginContext): RouteSpec[] {
  const metricsToken = ctx.config.metrics.token;
  const started = Date.now();
  return [
    defineRoute({
      id: 'health.live',
      method: 'get',
      path: '/healthz',
      summary: 'Liveness: the process is up.',
      tags: ['Operations'],
      auth: 'public',
      rateLimit: 'none',
      responses: { 200: { description: 'The process is up.', schema: healthBody } },
      handler: () => ok({ status: 'ok', uptime_s: Math.round((Date.now() - started) / 1000) }),
    }),
    defineRoute({
      id: 'health.ready',
      method: 'get',
      path: '/readyz',
      summary: 'Readiness: the database and Redis (when configured) answer.',
      tags: ['Operations'],
      auth: 'public',
      rateLimit: 'none',
      responses: {
        200: { description: 'Every dependency answers.', schema: readyBody },
        503: { description: 'A dependency does not answer; `failing` names it.', schema: readyBody },
      },
      handler: async () => {
        const checks: Record<string, Awaited<ReturnType<typeof runCheck>>> = {};
        const entries = [...ctx.container.resolve<ReadonlyMap<string, ReadinessCheck>>(TOKENS.Readiness)];
        await Promise.all(entries.map(async ([name, check]) => (checks[name] = await runCheck(check))));
        const failing = Object.keys(checks).filter((k) => checks[k]?.status === 'down');
        if (failing.length === 0) return ok({ status: 'ready', checks });
        return { status: 503, body: { status: 'not_ready', checks, failing, error: `Not ready: ${failing.join(', ')} not reachable.`, code: 'not_ready' } };
      },
    }),
    defineRoute({
      id: 'health.metrics',
      method: 'get',
      path: '/metrics',
      summary: 'Prometheus metrics in text exposition format.',
      tags: ['Operations'],
      auth: 'public',
      rateLimit: 'none',
      produces: ['text/plain'],
      // With METRICS_TOKEN set the route takes that token itself: the document says so, with its 401.
      ...(metricsToken ? { selfAuthenticated: { schemes: ['MetricsToken'] } } : {}),
      responses: {
        200: { description: 'Prometheus text format.' },
        ...(metricsToken ? { 401: { description: 'The metrics token (METRICS_TOKEN) was not sent, or is not the one this service takes.', schema: errorBodySchema } } : {}),
      },
      handler: async ({ req, res }): Promise<HandlerResult> => {
        if (metricsToken && !bearerIs(req.headers.authorization, metricsToken)) {
          // SPEC's 401 shapes: a token sent and refused is invalid_credentials, none sent unauthorized.
          const sent = req.headers.authorization !== undefined;
          throw new ApiError(sent ? 'invalid_credentials' : 'unauthorized', sent ? 'The metrics token sent is not the one this service takes.' : 'GET /metrics needs the metrics token.', {
            hint: "Send Authorization: Bearer <METRICS_TOKEN>, the operator's setting (Prometheus: authorization.credentials in the scrape config).",
            headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' },
            fields: { retryable: false, next: [] },
          });
        }
        res.setHeader('Content-Type', ctx.metrics.registry.contentType);
        res.status(200).end(await ctx.metrics.registry.metrics());
        return HANDLED;
      },
    }),
  ];
}
