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

/**
 * The count that binds the caller: an exhausted one, else the one with fewer requests left. The
 * X-RateLimit-* headers and a sandbox's `remaining.request_rate` both report it, so they agree.
 */
export function bindingRate(rate: RequestRate): RateLimitResult & { scope: 'workspace' | 'address' } {
  const { workspace: ws, address: ip } = rate;
  const addressBinds = ws.allowed && (!ip.allowed || ip.remaining < ws.remaining);
  return addressBinds ? { ...ip, scope: 'address' } : { ...ws, scope: 'workspace' };
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
    const rate: RequestRate = { workspace: ws, address: ip };
    const tighter = bindingRate(rate);
    ctx.state.rateLimit = rate;
    ctx.res.setHeader('X-RateLimit-Limit', String(tighter.limit));
    ctx.res.setHeader('X-RateLimit-Remaining', String(tighter.remaining));
    ctx.res.setHeader('X-RateLimit-Reset', String(Math.ceil(tighter.resetMs / 1000)));
    if (ws.allowed && ip.allowed) return;
    const retryAfter = Math.max(1, Math.ceil(tighter.retryAfterMs / 1000));
    throw new ApiError('rate_limited', `Request rate limit reached for this ${tighter.scope === 'workspace' ? 'workspace' : 'network address'}.`, {
      retry_after: retryAfter,
      limit: { scope: tighter.scope, requests_per_minute: tighter.limit },
      hint: `Wait ${retryAfter} s, then retry; spread requests out or use batch pricing for many items.`,
    });
  }
}
