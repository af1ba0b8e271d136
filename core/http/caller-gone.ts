import { setMaxListeners } from 'node:events';
import type { IncomingMessage } from 'node:http';

/**
 * Whether a request's connection closed before its answer was sent (the caller gave up, or a
 * shutdown's deadline closed it): an answer written now reaches nobody.
 */
export function callerGone(req: IncomingMessage & { res?: { destroyed: boolean; writableEnded: boolean } | undefined }): boolean {
  if (req.res?.writableEnded) return false;
  return req.socket.destroyed || req.res?.destroyed === true;
}

type Req = IncomingMessage & { res?: (NodeJS.EventEmitter & { destroyed: boolean; writableEnded: boolean }) | undefined };

/** One signal per request: the items of a batch share it (one 'close' listener on the response, not one per item). */
const signals = new WeakMap<IncomingMessage, AbortSignal>();

/**
 * A signal that aborts once the request's caller has gone (its connection closed before the answer
 * was written). For waits a call makes before its work, so a caller that gave up leaves no waiter
 * behind. The listener goes with the response's close, which every response reaches.
 */
export function callerLeftSignal(req: Req): AbortSignal {
  const known = signals.get(req);
  if (known) return known;
  const controller = new AbortController();
  // Every waiting item of a batch listens while it waits (up to BATCH_MAX_ITEMS at once): no leak to warn of.
  setMaxListeners(0, controller.signal);
  const check = () => {
    if (callerGone(req)) controller.abort();
  };
  check();
  // The response closes when its connection does, answered or not; the socket covers a request without one.
  (req.res ?? req.socket).once('close', check);
  signals.set(req, controller.signal);
  return controller.signal;
}
