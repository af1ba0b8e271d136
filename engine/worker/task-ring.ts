/**
 * The task ring shared by the pricing pool and its workers (one SharedArrayBuffer of Int32 pairs).
 * Slot `2 * (seq % size)` holds `seq * 4 + state`, the next one the thread id running the task.
 *
 * - the pool writes QUEUED when it submits a task;
 * - a worker swaps QUEUED for RUNNING (after writing its thread id) when it starts the task, and
 *   clears the slot when the task ends; if the swap fails the task was cancelled and is skipped;
 * - at the timeout the pool swaps QUEUED for CANCELLED, or finds RUNNING and terminates the thread.
 */
export const RING_QUEUED = 1;
export const RING_RUNNING = 2;
export const RING_CANCELLED = 3;

export const ringTag = (seq: number, state: number): number => seq * 4 + state;
export const ringSlot = (seq: number, size: number): number => (seq % size) * 2;
