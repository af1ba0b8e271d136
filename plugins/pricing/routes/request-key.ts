import { isApiError } from '../../../core/errors';
import type { RequestContext } from '../../../core/http/route';
import { idempotencyKeyOf } from '../../identity';
import { callIdempotency } from '../services/compute-call';

/**
 * The request's Idempotency-Key header; null without one. A malformed key is a 400 like a bad body,
 * with an example as SPEC's compute and batch 400s carry: the body as sent, which passed (the header
 * is read after it: only the header was wrong); for a batch, whose body may hold a hundred items, the
 * route's own.
 */
export function requestKey(ctx: RequestContext, sentIsExample: boolean): string | null {
  try {
    return idempotencyKeyOf(ctx.req);
  } catch (err) {
    if (!isApiError(err)) throw err;
    const example = sentIsExample && ctx.sent !== undefined ? ctx.sent : ctx.route.example;
    throw example !== undefined ? err.with({ example }) : err;
  }
}

/** A call's Idempotency-Key header, as callIdempotency keeps it; undefined without one. */
export function keyedCall(ctx: RequestContext, route: string, body: unknown): { key: string; fingerprint: string } | undefined {
  const key = requestKey(ctx, true);
  return key === null ? undefined : callIdempotency(key, route, body);
}
