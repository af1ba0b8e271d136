import { ApiError } from '../../../core/errors';
import type { KvStore } from '../../../core/kv';

const WINDOW_MS = 15 * 60_000;

/** Slows down addresses that keep sending rejected credentials (brute-force guard). */
export class FailedAuthGuard {
  constructor(
    private readonly kv: KvStore,
    private readonly limit: number,
  ) {}

  async check(ip: string): Promise<void> {
    const r = await this.kv.peekRateLimit(`authfail:${ip}`, this.limit, WINDOW_MS);
    if (r.remaining > 0) return;
    // The window slides: rejections of this window still weigh in after it ends, so only the end of
    // this window plus one whole window is sure to let the address in again.
    const retryAfter = Math.max(1, Math.ceil((r.resetMs + WINDOW_MS) / 1000));
    throw new ApiError('rate_limited', 'Too many rejected credentials from this address; slow down.', {
      retry_after: retryAfter,
      limit: { rejected_credentials_per_15_minutes: this.limit },
      hint: `Wait ${retryAfter} s before trying again, and check the credential you are sending.`,
    });
  }

  async fail(ip: string): Promise<void> {
    await this.kv.rateLimit(`authfail:${ip}`, this.limit, WINDOW_MS);
  }
}
