import { limitAddress } from '../../../core/address';
import { ApiError, isApiError } from '../../../core/errors';
import type { KvStore } from '../../../core/kv';

const WINDOW_MS = 15 * 60_000;
/** Outlives any check; only clears a count a crashed instance left behind. */
const FLIGHT_TTL_MS = 60_000;

/**
 * Slows down addresses that keep sending rejected credentials (brute-force guard). Every kind counts
 * and every kind is refused once the address is over its allowance: API keys, access and person
 * tokens, session cookies (`attempt`), credentials no authenticator reads (`refuse`), OAuth client
 * secrets (`check` and `fail`) and passwords (`verify`).
 */
export class FailedAuthGuard {
  constructor(
    private readonly kv: KvStore,
    private readonly limit: number,
    /** An IPv6 caller counts under its network of this many bits (core/address.ts: limitAddress). */
    private readonly ipv6Prefix: number,
  ) {}

  private key(ip: string): string {
    return `authfail:${limitAddress(ip, this.ipv6Prefix)}`;
  }

  async check(ip: string): Promise<void> {
    const r = await this.kv.peekRateLimit(this.key(ip), this.limit, WINDOW_MS);
    if (r.remaining > 0) return;
    // The window slides: rejections of this window still weigh in after it ends, so only the end of
    // this window plus one whole window is sure to let the address in again.
    throw this.refusal(Math.max(1, Math.ceil((r.resetMs + WINDOW_MS) / 1000)));
  }

  /**
   * Checks a credential sent from `ip`: an address over its allowance is refused (429) before the
   * credential is looked at, valid or not; a 401 the check throws counts as one more rejection
   * (other refusals, such as a person's 404 for a workspace they are not a member of, do not).
   */
  async attempt<T>(ip: string, check: () => Promise<T>): Promise<T> {
    await this.check(ip);
    try {
      return await check();
    } catch (err) {
      if (isApiError(err) && err.status === 401) await this.fail(ip);
      throw err;
    }
  }

  /** Refuses a credential that is rejected without a check (not recognised, not usable, sent twice): 429 for an address over its allowance, else `refusal`, counted. */
  async refuse(ip: string, refusal: ApiError): Promise<never> {
    await this.check(ip);
    await this.fail(ip);
    throw refusal;
  }

  /**
   * Runs a slow check of a guessable secret (a password: scrypt takes tens of ms), counting a null
   * answer as a rejection. The checks in flight from an address count against what it has left, so
   * a burst of concurrent guesses cannot all be checked before the first rejection is counted.
   */
  async verify<T>(ip: string, check: () => Promise<T | null>): Promise<T | null> {
    const flightKey = `authflight:${limitAddress(ip, this.ipv6Prefix)}`;
    const inFlight = await this.kv.incr(flightKey, 1, FLIGHT_TTL_MS);
    try {
      const r = await this.kv.peekRateLimit(this.key(ip), this.limit, WINDOW_MS);
      if (r.remaining === 0) throw this.refusal(Math.max(1, Math.ceil((r.resetMs + WINDOW_MS) / 1000)));
      if (inFlight > r.remaining) throw this.refusal(1);
      const found = await check();
      if (found === null) await this.fail(ip);
      return found;
    } finally {
      await this.kv.incr(flightKey, -1, FLIGHT_TTL_MS);
    }
  }

  private refusal(retryAfter: number): ApiError {
    return new ApiError('rate_limited', 'Too many rejected credentials from this address; slow down.', {
      retry_after: retryAfter,
      limit: { rejected_credentials_per_15_minutes: this.limit },
      hint: `Wait ${retryAfter} s before trying again, and check the credential you are sending.`,
    });
  }

  async fail(ip: string): Promise<void> {
    await this.kv.rateLimit(this.key(ip), this.limit, WINDOW_MS);
  }
}
