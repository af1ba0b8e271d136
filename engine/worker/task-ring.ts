/**
 * The task ring shared by the pricing pool and its workers (one SharedArrayBuffer of Int32 triples).
 * Slot `3 * (seq % size)` holds `seq * 4 + state`, the next one the thread id running the task, the
 * third the millisecond it started on the monotonic clock (modulo 2^31, see ringClock).
 *
 * - the pool writes QUEUED when it submits a task;
 * - a worker swaps QUEUED for RUNNING (after writing its thread id and start time) when it starts
 *   the task, and RUNNING for DONE when the task ends; if the first swap fails the task was
 *   cancelled and is skipped;
 * - at the timeout the pool swaps QUEUED for CANCELLED; finding RUNNING, it gives the task the rest
 *   of its time counted from its start, then terminates the thread; finding DONE, it knows the
 *   answer exists and is on its way back (or held with its batch behind a slower call).
 */
export const RING_DONE = 0;
export const RING_QUEUED = 1;
export const RING_RUNNING = 2;
export const RING_CANCELLED = 3;

export const ringTag = (seq: number, state: number): number => seq * 4 + state;
export const RING_STRIDE = 3;
export const ringSlot = (seq: number, size: number): number => (seq % size) * RING_STRIDE;

const CLOCK_MOD = 2 ** 31;
const CLOCK_MOD_BIG = BigInt(CLOCK_MOD);
/**
 * Milliseconds of the system's monotonic clock (the same in every thread of the process) modulo 2^31,
 * to fit an Int32 slot. Monotonic, so a wall-clock step (NTP, a resumed VM) neither stretches nor
 * shrinks a running call's time.
 */
export const ringClock = (): number => Number((process.hrtime.bigint() / 1_000_000n) % CLOCK_MOD_BIG);
/** Milliseconds since a ringClock() reading (correct across the wrap, for spans under 24 days). */
export const ringElapsed = (since: number): number => (((ringClock() - since) % CLOCK_MOD) + CLOCK_MOD) % CLOCK_MOD;
