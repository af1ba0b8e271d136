import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ApiError, errorBodySchema } from '../../core/errors';
import { defineRoute, ok, HANDLED } from '../../core/http/route';
import { sendBody } from '../../core/http/send-body';
import type { HandlerResult, RouteSpec } from '../../core/http/route';
import type { PluginContext } from '../../core/plugin';
import { READINESS_TIMEOUT_MS } from './readiness';
import type { ReadinessProbe } from './readiness';

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
  checked_at: z.string().describe('When the checks ran (ISO 8601): answers within READINESS_CACHE_MS of it share that run.'),
});
/** The 503: the common error fields (core/errors.ts) beside the status, so it reads as every other refusal does. */
const notReadyBody = readyBody.extend({
  status: z.literal('not_ready'),
  failing: z.array(z.string()).describe('The checks that failed (keys of checks).'),
  error: z.string().describe('What went wrong, for people (the same text as message).'),
  code: z.literal('not_ready'),
  message: z.string().describe('The same text as error.'),
  request_id: z.string().describe('The request id (req_…), also the X-Request-Id header.'),
});

/**
 * `service_dependency_up{dependency}`: each readiness check (database, Redis when configured, the pricing pool's queue)
 * run at scrape time, 1 when it passed within READINESS_TIMEOUT_MS. An outage then shows as a series to alert on, not only as 503s.
 */
export function registerDependencyGauge(ctx: PluginContext, probe: ReadinessProbe): void {
  ctx.metrics.gauge({
    name: 'service_dependency_up',
    help: `Whether each check /readyz makes passed at its last run, at most READINESS_CACHE_MS before the scrape (1) or not within ${READINESS_TIMEOUT_MS} ms (0): the database, Redis when REDIS_URL is set, the pricing pool's queue.`,
    labelNames: ['dependency'],
    async collect() {
      const { checks } = await probe.read();
      for (const [name, result] of Object.entries(checks)) this.set({ dependency: name }, result.status === 'up' ? 1 : 0);
    },
  });
}

export function healthRoutes(ctx: PluginContext, probe: ReadinessProbe): RouteSpec[] {
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
      summary: "Readiness: the database and Redis (when configured) answer, and the pricing pool's queue is under 90% of ENGINE_MAX_QUEUE.",
      description: 'The checks run at most once per READINESS_CACHE_MS (1 s by default), and once at a time: answers meanwhile share that run, and checked_at says when it was.',
      tags: ['Operations'],
      auth: 'public',
      rateLimit: 'none',
      responses: {
        200: { description: 'Every dependency answers.', schema: readyBody },
        503: { description: 'A check failed; `failing` names it, in the common error shape (code not_ready).', schema: notReadyBody },
      },
      handler: async () => {
        const { checks, checkedAt } = await probe.read();
        const failing = Object.keys(checks).filter((k) => checks[k]?.status === 'down');
        if (failing.length === 0) return ok({ status: 'ready', checks, checked_at: checkedAt });
        // Thrown, so the error handler writes it as every refusal (error, code, message, request_id), status fields beside.
        throw new ApiError('not_ready', `Not ready: the ${failing.join(', ')} check${failing.length > 1 ? 's' : ''} failed (checks gives why).`, { fields: { status: 'not_ready', checks, failing, checked_at: checkedAt } });
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
        const body = await ctx.metrics.registry.metrics();
        sendBody(res.status(200), body, ctx.metrics.registry.contentType);
        return HANDLED;
      },
    }),
  ];
}
