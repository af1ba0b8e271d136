import { serviceUnavailable } from '../../../core/errors';
import type { ApiError } from '../../../core/errors';
import { randomToken } from '../../../core/ids';
import { KvUnavailableError } from '../../../core/kv';
import type { KvStore } from '../../../core/kv';

/** Between looks at a lease another instance holds: from the first, doubling up to the last. */
const LEASE_POLL_FIRST_MS = 20;
const LEASE_POLL_MAX_MS = 250;

/** What a call whose caller left while it waited for its key's turn ends with: nobody reads it, the log and the metrics do. */
export function leftWhileWaiting(): ApiError {
  return serviceUnavailable(
    "The caller left while the call waited for its Idempotency-Key's turn: nothing was priced or charged.",
    'Nothing was charged. Send the request again with the same Idempotency-Key.',
  );
}

/** Resolves when `signal` aborts (never without one); `dispose` removes its listener. */
function whenAborted(signal: AbortSignal | undefined): { aborted: Promise<void>; dispose: () => void } {
  if (!signal) return { aborted: new Promise<void>(() => undefined), dispose: () => undefined };
  let onAbort!: () => void;
  const aborted = new Promise<void>((resolve) => (onAbort = resolve));
  signal.addEventListener('abort', onAbort, { once: true });
  return { aborted, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/**
 * One call at a time per Idempotency-Key: a retry sent while the first call with its key is still
 * in flight (its insert slow, its caller gone) waits for it to end, marks included, and then
 * answers what it recorded or, if it recorded nothing charged, prices afresh. On one instance the
 * turn is a promise; with Redis it is also a lease on the shared store, so a retry that reached
 * another instance waits too (it was refused 429 when the first took a sandbox's last call). Past
 * the wait a call goes on beside the other: the key's claim in the usage insert keeps the charge
 * single whatever happens here.
 */
export class KeyedTurns {
  private readonly held = new Map<string, Promise<void>>();

  /** `kv`: the shared store; a lease is taken only on Redis (the in-process store serves one instance). */
  constructor(private readonly kv?: KvStore) {}

  /**
   * Waits (at most `waitMs`) for the key's turn and takes it; call the result to give it back.
   * `callerLeft` ends the wait: a call whose caller has gone throws leftWhileWaiting() instead of
   * queueing for work nobody will read (a client that gave up and retried would otherwise leave a
   * waiter per attempt).
   */
  async take(id: string, waitMs: number, callerLeft?: () => AbortSignal): Promise<() => void> {
    const deadline = Date.now() + waitMs;
    // Made only when the call has to wait: most keyed calls find their key free and never need it.
    let signal: AbortSignal | undefined;
    const leftSignal = (): AbortSignal | undefined => (signal ??= callerLeft?.());
    while (this.held.has(id)) {
      if (leftSignal()?.aborted) throw leftWhileWaiting();
      const left = deadline - Date.now();
      // Waited long enough: go on beside it, the claim keeps the charge single.
      if (left <= 0) return () => undefined;
      await this.pause(left, this.held.get(id), leftSignal());
    }
    if (signal?.aborted) throw leftWhileWaiting();
    let release!: () => void;
    const turn = new Promise<void>((resolve) => (release = resolve));
    this.held.set(id, turn);
    const giveBackLocal = () => {
      if (this.held.get(id) === turn) this.held.delete(id);
      release();
    };
    let lease: (() => void) | null;
    try {
      lease = await this.lease(id, deadline, waitMs, leftSignal);
    } catch (err) {
      giveBackLocal();
      throw err;
    }
    return () => {
      giveBackLocal();
      lease?.();
    };
  }

  /**
   * The key's lease on the shared store, held for at most `waitMs` (a holder that died frees it
   * then); null when there is no shared store, the wait ran out, or Redis did not answer: the lease
   * is a courtesy to retries (the claim keeps the charge single), so no call fails for want of it.
   */
  private async lease(id: string, deadline: number, waitMs: number, callerLeft: () => AbortSignal | undefined): Promise<(() => void) | null> {
    const kv = this.kv;
    if (!kv || kv.kind !== 'redis') return null;
    const key = `idem-turn:${id}`;
    const token = randomToken(12);
    // Given back only while still ours; a failure to give it back leaves it to expire.
    const giveBack = () => void kv.delIfEquals(key, token).catch(() => undefined);
    let pause = LEASE_POLL_FIRST_MS;
    for (;;) {
      try {
        if (await kv.setIfAbsent(key, token, Math.max(1, waitMs))) return giveBack;
      } catch (err) {
        if (!(err instanceof KvUnavailableError)) throw err;
        // The SET may yet be carried out (a stalled Redis): the delete, sent after it on the same connection, undoes it.
        giveBack();
        return null;
      }
      if (Date.now() >= deadline) return null;
      const signal = callerLeft();
      await this.pause(pause, undefined, signal);
      if (signal?.aborted) throw leftWhileWaiting();
      pause = Math.min(pause * 2, LEASE_POLL_MAX_MS);
    }
  }

  /** Waits `ms`, or less: until `until` settles or the caller leaves. */
  private async pause(ms: number, until: Promise<void> | undefined, callerLeft: AbortSignal | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const abort = whenAborted(callerLeft);
    try {
      await Promise.race([...(until ? [until] : []), abort.aborted, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
    } finally {
      clearTimeout(timer);
      abort.dispose();
    }
  }
}
