import { ApiError } from '../../../core/errors';
import type { Guard } from '../../../core/hooks';
import type { RequestContext } from '../../../core/http/route';
import type { KvStore, RateLimitResult } from '../../../core/kv';

const WINDOW_MS = 60_000;

/** The request-rate counts of one request, as the guard left them (absent on keyless routes). */
export interface RequestRate {
  workspace: RateLimitResult;
  address: RateLimitResult;
}

export function requestRateOf(ctx: Pick<RequestContext, 'state'>): RequestRate | undefined {
  return ctx.state.rateLimit as RequestRate | undefined;
}

export interface RateLimits {
  perWorkspacePerMinute: number;
  perAddressPerMinute: number;
}

/**
 * Default request-rate limits on every authenticated route: per workspace and per network
 * address, counted on the key-value store so instances sharing Redis enforce one limit.
 */
export class RateLimitGuard implements Guard {
  readonly name = 'rate-limit';

  constructor(
    private readonly kv: KvStore,
    private readonly limits: RateLimits,
  ) {}

  async run(ctx: RequestContext): Promise<void> {
    if (!ctx.principal || ctx.route.rateLimit === 'none') return;
    const [ws, ip] = await Promise.all([
      this.kv.rateLimit(`rl:ws:${ctx.principal.workspaceId}`, this.limits.perWorkspacePerMinute, WINDOW_MS),
      this.kv.rateLimit(`rl:ip:${ctx.clientIp}`, this.limits.perAddressPerMinute, WINDOW_MS),
    ]);
    const tighter: RateLimitResult = !ws.allowed ? ws : !ip.allowed ? ip : ws.remaining <= ip.remaining ? ws : ip;
    ctx.state.rateLimit = { workspace: ws, address: ip } satisfies RequestRate;
    ctx.res.setHeader('X-RateLimit-Limit', String(tighter.limit));
    ctx.res.setHeader('X-RateLimit-Remaining', String(tighter.remaining));
    ctx.res.setHeader('X-RateLimit-Reset', String(Math.ceil(tighter.resetMs / 1000)));
    if (ws.allowed && ip.allowed) return;
    const retryAfter = Math.max(1, Math.ceil(tighter.retryAfterMs / 1000));
    const which = !ws.allowed ? 'workspace' : 'network address';
    throw new ApiError('rate_limited', `Request rate limit reached for this ${which}.`, {
      retry_after: retryAfter,
      limit: { scope: !ws.allowed ? 'workspace' : 'address', requests_per_minute: tighter.limit },
      hint: `Wait ${retryAfter} s, then retry; spread requests out or use batch pricing for many items.`,
    });
  }
}
