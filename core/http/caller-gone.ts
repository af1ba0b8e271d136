import type { IncomingMessage } from 'node:http';

/**
 * Whether a request's connection closed before its answer was sent (the caller gave up, or a
 * shutdown's deadline closed it): an answer written now reaches nobody.
 */
export function callerGone(req: IncomingMessage & { res?: { destroyed: boolean; writableEnded: boolean } | undefined }): boolean {
  if (req.res?.writableEnded) return false;
  return req.socket.destroyed || req.res?.destroyed === true;
}
