import { ApiError } from '../../../core/errors';
import type { Guard } from '../../../core/hooks';
import type { RequestContext } from '../../../core/http/route';
import { limitAddress } from '../../../core/address';
import type { KvStore, RateLimitResult } from '../../../core/kv';
import { identityOf } from './principal';

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
  /** An IPv6 caller counts under its network of this many bits (core/address.ts: limitAddress). */
  ipv6Prefix: number;
}

/**
 * Default request-rate limits: per workspace and per network address on authenticated requests, per
 * network address alone on anonymous ones (sign-up, sign-in, the public catalogue; the keyless demo
 * has its own hourly budget), counted on the key-value store so instances sharing Redis enforce one
 * limit. Runs before authorization, so refused requests count too.
 */
export class RateLimitGuard implements Guard {
  readonly name = 'rate-limit';

  constructor(
    private readonly kv: KvStore,
    private readonly limits: RateLimits,
  ) {}

  async run(ctx: RequestContext): Promise<void> {
    if (ctx.route.rateLimit === 'none') return;
    if (!ctx.principal) return this.anonymous(ctx);
    const addressKey = this.addressKey(ctx);
    const [ws, ip] = await Promise.all([
      this.kv.rateLimit(`rl:ws:${ctx.principal.workspaceId}`, this.limits.perWorkspacePerMinute, WINDOW_MS),
      this.kv.rateLimit(addressKey, this.limits.perAddressPerMinute, WINDOW_MS),
    ]);
    const rate: RequestRate = { workspace: ws, address: ip };
    const tighter = bindingRate(rate);
    ctx.state.rateLimit = rate;
    setHeaders(ctx, tighter);
    if (ws.allowed && ip.allowed) return;
    // Refused by one limit, the request is given back to the other: one noisy address must not use up
    // its workspace's allowance for the workspace's other callers, nor a workspace over its limit the
    // allowance of an address it shares with others.
    // Best effort: a refund Redis does not take leaves one request counted, not the 429 turned into a 503.
    const refund = ws.allowed ? this.kv.refundRateLimit(`rl:ws:${ctx.principal.workspaceId}`, WINDOW_MS, 1, ws.window) : ip.allowed ? this.kv.refundRateLimit(addressKey, WINDOW_MS, 1, ip.window) : null;
    await refund?.catch((err: unknown) => ctx.log.warn({ err }, 'a request refused by one rate limit stays counted by the other'));
    // Batch pricing is advice for pricing calls only, and never for an unclaimed sandbox, which may not batch.
    throw rateLimited(tighter, PRICING_PATH.test(ctx.route.path) && !identityOf(ctx.principal).sandbox);
  }

  private async anonymous(ctx: RequestContext): Promise<void> {
    if (ctx.route.rateLimit === 'demo') return;
    const ip = await this.kv.rateLimit(this.addressKey(ctx), this.limits.perAddressPerMinute, WINDOW_MS);
    setHeaders(ctx, ip);
    if (!ip.allowed) throw rateLimited({ ...ip, scope: 'address' }, false);
  }

  private addressKey(ctx: RequestContext): string {
    return `rl:ip:${limitAddress(ctx.clientIp, this.limits.ipv6Prefix)}`;
  }
}

function setHeaders(ctx: RequestContext, r: RateLimitResult): void {
  ctx.res.setHeader('X-RateLimit-Limit', String(r.limit));
  ctx.res.setHeader('X-RateLimit-Remaining', String(r.remaining));
  ctx.res.setHeader('X-RateLimit-Reset', String(Math.ceil(r.restoredMs / 1000)));
}

/** The routes whose calls one batch could carry instead. */
const PRICING_PATH = /^\/api\/(compute\/price|price-router)(\/|$)/;

function rateLimited(r: RateLimitResult & { scope: 'workspace' | 'address' }, mayBatch: boolean): ApiError {
  const retryAfter = Math.max(1, Math.ceil(r.retryAfterMs / 1000));
  return new ApiError('rate_limited', `Request rate limit reached for this ${r.scope === 'workspace' ? 'workspace' : 'network address'}.`, {
    retry_after: retryAfter,
    limit: { scope: r.scope, requests_per_minute: r.limit },
    hint: `Wait ${retryAfter} s, then retry; spread requests out${mayBatch ? ' or use batch pricing (POST /api/compute/batch) for many items' : ''}.`,
  });
}
