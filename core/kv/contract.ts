import type { Logger } from '../logger';

/** A subscriber may return a promise; its rejection is caught like a throw. */
export type MessageHandler = (message: string) => unknown;

/**
 * Keeps a subscriber's failure with the subscriber. Redis delivers on its connection's event,
 * where a throw or a rejected promise is unhandled and ends the process; the in-process store
 * would hand a throw back to the publisher, which Redis cannot do, so neither store does.
 */
export function isolateHandler(handler: MessageHandler, channel: string, log: Logger): (message: string) => void {
  const failed = (err: unknown) => log.error({ err, channel }, 'key-value subscriber failed');
  return (message) => {
    try {
      const result = handler(message);
      if (result instanceof Promise) result.catch(failed);
    } catch (err) {
      failed(err);
    }
  };
}
