import type { Config } from '../../../config';
import type { Admitter, AdmissionRequest, Reservation } from '../../../core/admission';
import type { Clock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { dailyQuotaRefusal } from '../../../core/daily-quota';
import type { NextStep } from '../../../core/errors';
import { randomToken } from '../../../core/ids';
import { KvUnavailableError, incrFromRecord } from '../../../core/kv';
import type { KvStore } from '../../../core/kv';
import type { Logger } from '../../../core/logger';
import { claimOffered, claimStep, identityOf } from '../../identity';

const DAY_MS = 86_400_000;
/**
 * How long a call's count stays undoable: as long as the day's counter lives, so a count whose
 * instance died can be taken back whenever the sandbox next calls. Made final (forgotten) when the
 * call ends, so only counts of calls in flight or lost keep one.
 */
const COUNT_TOKEN_TTL_MS = 2 * DAY_MS;
/** How long a lost count is retried: past any stall after which Redis could still carry it out. */
const UNDO_GIVE_UP_MS = 3_600_000;
/** Between attempts to take back a count whose answer was lost, until Redis answers. */
const UNDO_RETRY_MS = 1000;
/** Most counts of dead instances one refused call takes back. */
const TAKE_BACK_MAX = 100;

/** The 429 of the routes the sandbox allowance meters, for OpenAPI. */
export const sandboxQuotaRefusal = dailyQuotaRefusal(
  'an unclaimed sandbox made its SANDBOX_COMPUTE_CALLS_PER_DAY calls today (price verifications included)',
  true,
  ', and next lists the steps to go on (claim always; day_pass, top_up, pay_per_call as offered). A sandbox whose calls still in flight hold the rest of its day gets rate_limited with retry_after 1',
);

/**
 * Where a sandbox at its daily limit can go next. The payment steps name the addresses the payments
 * plugin will serve; until a plugin takes payments (`paymentsOffered`) they say `available: false`,
 * so an agent does not spend a request on an address that answers 404.
 */
export function quotaNextSteps(payable: boolean, dayPass: { calls: number; validHours: number }, offered: { payments?: boolean; claim?: boolean } = {}): NextStep[] {
  const paymentsOffered = offered.payments ?? false;
  const steps: NextStep[] = [];
  const pending = paymentsOffered ? '' : ' Not offered by this service yet.';
  if (payable) {
    steps.push({
      action: 'pay_per_call',
      description: `Repeat this request with an x402 payment in X-PAYMENT (or PAYMENT-SIGNATURE); it runs without counting against the daily limit.${pending}`,
      method: 'POST',
      header: 'X-PAYMENT',
      available: paymentsOffered,
    });
  }
  steps.push(
    { action: 'day_pass', description: `Buy a day pass (${dayPass.calls} calls for ${dayPass.validHours} hours) with one USDC payment and your key.${pending}`, method: 'POST', path: '/api/payments/day-pass', available: paymentsOffered },
    { action: 'top_up', description: `Top up a prepaid USDC balance; calls past the daily limit draw from it.${pending}`, method: 'POST', path: '/api/balance/top-up', available: paymentsOffered },
    claimStep(offered.claim ?? true),
  );
  return steps;
}

interface PendingUndo {
  undo: () => Promise<void>;
  workspaceId: string;
  giveUpAt: number;
}

/**
 * The free daily allowance of sandbox workspaces (SPEC: 25 compute calls per day). A call reserves
 * one unit; a failed call releases it, so failures are never counted. Price verification counts
 * against the same limit (SPEC, Paying for calls: "price verification still counts against the
 * limit"), but is not payable per call, so its 429 offers no pay_per_call step.
 */
export class SandboxAllowance implements Admitter {
  readonly name = 'sandbox-daily-allowance';
  /** Counts whose answer was lost, to take back once Redis answers. */
  private readonly pendingUndos = new Set<PendingUndo>();
  private undoTimer: NodeJS.Timeout | null = null;
  /** The leases of this instance's calls in flight (member → lease set), renewed while they run. */
  private readonly held = new Map<string, string>();
  private renewTimer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly config: Config,
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  /**
   * The calls of the day already recorded: what a day's counter starts from when this store has
   * none (the in-process store after a restart, or a flushed Redis), so a restart gives no sandbox a
   * second allowance. Counted as the counter counts: answered calls (failures are released), unpaid.
   */
  private async recordedToday(workspaceId: string, dayStart: number): Promise<number> {
    const row = await this.sql.one<{ n: number }>(
      `SELECT count(*)::int AS n FROM usage_events
        WHERE workspace_id = $1 AND created_at >= $2 AND status = 'ok' AND paid_via IS NULL AND operation IN ('compute', 'batch_item', 'router', 'verify')`,
      [workspaceId, new Date(dayStart)],
    );
    return row?.n ?? 0;
  }

  /** The day's counter of a sandbox, and when the day ends. */
  private dayOf(workspaceId: string): { dayStart: number; resetsAt: string; key: string; leases: string } {
    const dayStart = Math.floor(this.clock.now() / DAY_MS) * DAY_MS;
    const key = `allowance:${workspaceId}:${new Date(dayStart).toISOString().slice(0, 10)}`;
    return { dayStart, resetsAt: new Date(dayStart + DAY_MS).toISOString(), key, leases: `${key}:held` };
  }

  /**
   * Takes back the counts of calls whose instance stopped renewing their leases (it crashed or was
   * killed mid-call, so neither their commit nor their release will come). Each count is taken back
   * once, by its token, whoever else (a late release) tries too. Answers how many.
   */
  private async takeBackAbandoned(key: string, leases: string): Promise<number> {
    const ended = await this.kv.takeExpiredLeases(leases, this.clock.now(), TAKE_BACK_MAX);
    for (const member of ended) {
      const [units, token] = member.split(':') as [string, string];
      await this.kv.undoOnce(key, Number(units), token);
    }
    if (ended.length > 0) this.log.warn({ key, calls: ended.length }, 'took back the daily counts of sandbox calls whose instance stopped while they ran');
    return ended.length;
  }

  /**
   * A call taken back may have been recorded: its instance died between the usage event's commit and
   * the count's. The counter then never holds fewer than the calls recorded today, which it counted.
   * Read then raised, not atomic: only after a takeback, which follows an instance's death.
   */
  private async keepRecordedCounted(key: string, workspaceId: string, dayStart: number): Promise<void> {
    const recorded = await this.recordedToday(workspaceId, dayStart);
    const counted = Number((await this.kv.get(key)) ?? 0);
    if (recorded > counted) await this.kv.incrIfPresent(key, recorded - counted);
  }

  /** Renews this instance's leases every third of their life, while it has calls in flight. */
  private renewLeases(): void {
    if (this.renewTimer || this.closed) return;
    const leaseMs = this.config.limits.sandbox.callLeaseMs;
    this.renewTimer = setInterval(() => {
      if (this.held.size === 0) {
        if (this.renewTimer) clearInterval(this.renewTimer);
        this.renewTimer = null;
        return;
      }
      const until = this.clock.now() + leaseMs;
      for (const [member, leases] of this.held) {
        this.kv.holdLease(leases, member, until, 2 * DAY_MS, true).catch((err: unknown) => this.log.warn({ err }, 'could not renew the lease of a sandbox call in flight'));
      }
    }, Math.max(1, Math.floor(leaseMs / 3)));
    this.renewTimer.unref();
  }

  async standing(request: Omit<AdmissionRequest, 'units'>): Promise<Record<string, unknown> | null> {
    const p = request.principal;
    if (!p || !identityOf(p).sandbox) return null;
    const limit = this.config.limits.sandbox.computeCallsPerDay;
    const { dayStart, resetsAt, key } = this.dayOf(p.workspaceId);
    const counted = await this.kv.get(key);
    const used = counted !== null ? Number(counted) : await this.recordedToday(p.workspaceId, dayStart);
    return { daily_compute_calls: { limit, remaining: Math.max(0, limit - used), resets_at: resetsAt } };
  }

  async admit(request: AdmissionRequest, tookBack = false): Promise<Reservation | null> {
    const p = request.principal;
    if (!p || !identityOf(p).sandbox) return null;
    const limit = this.config.limits.sandbox.computeCallsPerDay;
    const now = this.clock.now();
    const { dayStart, resetsAt, key, leases } = this.dayOf(p.workspaceId);
    // Each call counts under a token of its own, so its count can be taken back whatever became of it, and holds a
    // lease while it runs, so a count its instance can no longer settle (it died) is taken back by another.
    const token = randomToken(12);
    const member = `${request.units}:${token}`;
    const undo = () => this.kv.undoOnce(key, request.units, token);
    let used: number;
    try {
      used = await incrFromRecord(this.kv, key, request.units, 2 * DAY_MS, () => this.recordedToday(p.workspaceId, dayStart), { token, ttlMs: COUNT_TOKEN_TTL_MS });
      if (used <= limit) await this.kv.holdLease(leases, member, now + this.config.limits.sandbox.callLeaseMs, 2 * DAY_MS);
    } catch (err) {
      // The answer was lost, not necessarily the count: a stalled Redis carries it out when it resumes, for a call
      // answered 503. Taken back once Redis answers (a no-op when it never counted).
      if (err instanceof KvUnavailableError) this.undoWhenBack(undo, p.workspaceId);
      throw err;
    }
    if (used > limit) {
      await undo();
      // Places held by calls of an instance that died come back once their leases end; then this call tries again.
      if (!tookBack && (await this.takeBackAbandoned(key, leases)) > 0) {
        await this.keepRecordedCounted(key, p.workspaceId, dayStart);
        return this.admit(request, true);
      }
      // Calls still running hold their places until they end (a failure gives its place back): the day is not
      // spent until the recorded calls fill it, and a retry soon may find a place.
      const recorded = await this.recordedToday(p.workspaceId, dayStart);
      if (recorded + request.units <= limit) {
        // Counted after the undo, and at most the places left: calls refused beside this one take theirs back too.
        const counted = Number((await this.kv.get(key)) ?? used - request.units);
        const inFlight = Math.min(limit - recorded, Math.max(1, counted - recorded));
        throw new ApiError('rate_limited', `${inFlight === 1 ? '1 call of this sandbox is still in flight and holds' : `${inFlight} calls of this sandbox are still in flight and hold`} the rest of its ${limit} calls for today; a call that fails gives its place back.`, {
          retry_after: 1,
          limit: { compute_calls_per_day: limit, in_flight: inFlight, recorded_today: recorded, scope: 'workspace', resets_at: resetsAt },
          hint: 'Retry in 1 s, or send fewer calls at once: the daily quota is not reached while calls in flight may still fail.',
        });
      }
      const retryAfter = Math.max(1, Math.ceil((dayStart + DAY_MS - now) / 1000));
      // A per-call payment rides in an HTTP header of the call itself, which an MCP tool call cannot send.
      const payable = (request.operation === 'compute' || request.operation === 'router') && request.channel !== 'mcp';
      const next = quotaNextSteps(payable, this.config.limits.dayPass, { claim: claimOffered(this.config) });
      const usable = next.filter((step) => step.available === true).map((step) => step.action);
      throw new ApiError('daily_quota_exceeded', `Daily quota reached: this sandbox workspace may make ${limit} compute calls per day (price verifications included).`, {
        retry_after: retryAfter,
        limit: { compute_calls_per_day: limit, scope: 'workspace', resets_at: resetsAt },
        hint: `The daily quota resets at 00:00 UTC (in ${retryAfter} s). ${
          usable.length > 0 ? `To continue now: ${usable.join(', ')} (see next; a step with available false is not offered by this service yet).` : 'Nothing this service offers lets it continue sooner (every step in next says available false).'
        }`,
        next,
      });
    }
    this.held.set(member, leases);
    this.renewLeases();
    // Best effort: a lease left behind ends unrenewed, and taking back a count already settled does nothing.
    const dropLease = () =>
      this.kv.dropLease(leases, member).catch((err: unknown) => {
        this.log.warn({ err }, 'could not drop the lease of a settled sandbox call');
        // Read as still held: nothing took the count back, so nothing is counted again.
        return true;
      });
    let settled = false;
    let committed = false;
    return {
      admitter: this.name,
      paidVia: null,
      remaining: { daily_compute_calls: { limit, remaining: Math.max(0, limit - used), resets_at: resetsAt } },
      commit: async () => {
        if (settled) return;
        settled = true;
        committed = true;
        // Not waited for: the call is recorded and its answer must not wait for, or fail on, Redis. Left undone (Redis
        // gone), the count keeps its token and lease, and may be taken back once the lease ends: the sandbox gains a call.
        this.held.delete(member);
        (async () => {
          // Final from here. Already taken back when this instance was taken for dead (stalled past its lease, which
          // another took): counted again, for the call was made. A count without a token (a counter lost twice
          // while it was made) keeps its lease: nothing took it back.
          const madeFinal = await this.kv.forgetOnce(key, token);
          const stillHeld = await dropLease();
          if (!madeFinal && !stillHeld) await this.kv.incrIfPresent(key, request.units);
        })().catch((err: unknown) => this.log.warn({ err, workspaceId: p.workspaceId }, 'could not make the daily count of a sandbox call final'));
      },
      release: async () => {
        if (settled) return;
        settled = true;
        this.held.delete(member);
        await undo();
        void dropLease();
      },
      refund: async () => {
        if (!committed) return;
        committed = false;
        await this.kv.incrIfPresent(key, -request.units);
      },
    };
  }

  /**
   * Takes a lost count back now and, while Redis does not answer, on one timer for all of them. The
   * first attempt goes out on the connection right after the lost count, so Redis, executing in
   * order, takes it back right after carrying it out.
   */
  private undoWhenBack(undo: () => Promise<void>, workspaceId: string): void {
    const pending = { undo, workspaceId, giveUpAt: Date.now() + UNDO_GIVE_UP_MS };
    this.pendingUndos.add(pending);
    void this.attemptUndo(pending);
  }

  private async attemptUndo(pending: PendingUndo): Promise<void> {
    try {
      await pending.undo();
      this.pendingUndos.delete(pending);
    } catch (err) {
      if (this.closed || !(err instanceof KvUnavailableError) || Date.now() >= pending.giveUpAt) {
        this.pendingUndos.delete(pending);
        this.log.warn({ err, workspaceId: pending.workspaceId }, 'a sandbox call refused for an unanswered count may stay counted');
        return;
      }
      this.undoTimer ??= setTimeout(() => {
        this.undoTimer = null;
        for (const p of this.pendingUndos) void this.attemptUndo(p);
      }, UNDO_RETRY_MS).unref();
    }
  }

  /** Stops retrying (before the store closes), after one last attempt at what is still pending. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.undoTimer) clearTimeout(this.undoTimer);
    this.undoTimer = null;
    if (this.renewTimer) clearInterval(this.renewTimer);
    this.renewTimer = null;
    await Promise.all([...this.pendingUndos].map((p) => this.attemptUndo(p)));
  }
}
