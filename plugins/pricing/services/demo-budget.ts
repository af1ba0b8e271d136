import { limitAddress } from '../../../core/address';
import { ApiError } from '../../../core/errors';
import type { Guard } from '../../../core/hooks';
import type { RequestContext } from '../../../core/http/route';
import { incrFromRecord } from '../../../core/kv';
import type { KvStore } from '../../../core/kv';

const HOUR_MS = 3_600_000;

/**
 * The keyless demo's hourly budget per caller address (routes declaring `rateLimit: 'demo'`).
 * Budget headers go on every answer of those routes, validation errors included. The budget is
 * per clock hour (UTC), so the reset time it reports is when the whole budget is back; a sliding
 * window would report a time at which the previous hour's calls still count.
 */
export class DemoBudgetGuard implements Guard {
  readonly name = 'demo-budget';

  constructor(
    private readonly kv: KvStore,
    private readonly perHour: () => number,
    private readonly now: () => number,
    /** The keyless calls of an address the usage records hold since a time (a restart's starting point). */
    private readonly recorded: (ip: string, since: Date) => Promise<number>,
    /** An IPv6 caller counts under its network of this many bits (core/address.ts: limitAddress). */
    private readonly ipv6Prefix: () => number,
    /**
     * Whether a caller at this address may register now (SELF_REGISTRATION_OPEN, and its daily registrations not spent):
     * the refusal offers a sandbox key only then.
     */
    private readonly registrationOpen: (ip: string) => boolean = () => true,
  ) {}

  /** Counts one keyless call of an address; the MCP endpoint calls it per keyless tool call. */
  async consume(ip: string): Promise<{ allowed: boolean; limit: number; remaining: number; resetsAt: string; error: ApiError | null }> {
    const limit = this.perHour();
    const now = this.now();
    const hourStart = Math.floor(now / HOUR_MS) * HOUR_MS;
    // Usage events keep the full address, so after a restart an IPv6 network's count starts from what
    // this one address spent: the least the network spent.
    const used = await incrFromRecord(this.kv, `demo:${limitAddress(ip, this.ipv6Prefix())}:${hourStart}`, 1, 2 * HOUR_MS, () => this.recorded(ip, new Date(hourStart)));
    const allowed = used <= limit;
    const resetsAt = new Date(hourStart + HOUR_MS).toISOString();
    return { allowed, limit, remaining: Math.max(0, limit - used), resetsAt, error: allowed ? null : this.refusal(limit, resetsAt, hourStart + HOUR_MS - now, this.registrationOpen(ip)) };
  }

  async run(ctx: RequestContext): Promise<void> {
    if (ctx.route.rateLimit !== 'demo') return;
    const b = await this.consume(ctx.clientIp);
    ctx.res.setHeader('X-Demo-Budget-Limit', String(b.limit));
    ctx.res.setHeader('X-Demo-Budget-Remaining', String(b.remaining));
    ctx.res.setHeader('X-Demo-Budget-Reset', b.resetsAt);
    ctx.state.demoBudget = { limit_per_hour: b.limit, remaining: b.remaining, resets_at: b.resetsAt };
    if (b.error) throw b.error;
  }

  private refusal(limit: number, resetsAt: string, retryAfterMs: number, open: boolean): ApiError {
    const retryAfter = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return new ApiError('rate_limited', `The demo budget of this address is used up (${limit} calls per hour).`, {
      retry_after: retryAfter,
      limit: { demo_calls_per_hour: limit, resets_at: resetsAt },
      hint: open ? `Wait ${retryAfter} s, or get a free sandbox key (no human needed) for your own daily allowance.` : `Wait ${retryAfter} s, or call with a key of your own for your own daily allowance.`,
      next: open ? [{ action: 'register_agent', method: 'POST', path: '/api/agents/register', body: { name: 'my-pricing-agent' } }] : [],
    });
  }
}
