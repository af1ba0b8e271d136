import type { Logger } from './logger';

/**
 * Domain events. Plugins add their own event names by declaration merging:
 *   declare module '../../core/events' { interface DomainEvents { 'workspace.claimed': {...} } }
 */
export interface DomainEvents {
  'service.started': { url: string };
  'service.stopping': Record<string, never>;
}

export type EventName = keyof DomainEvents;
type Handler<K extends EventName> = (payload: DomainEvents[K]) => void | Promise<void>;

/**
 * In-process event bus. `emit` waits for every handler and isolates failures: a handler that
 * throws is logged and never fails the emitter or the other handlers.
 */
export class EventBus {
  private readonly handlers = new Map<EventName, Array<{ name: string; fn: Handler<never> }>>();

  constructor(private readonly log: Logger) {}

  on<K extends EventName>(event: K, subscriber: string, fn: Handler<K>): () => void {
    const list = this.handlers.get(event) ?? [];
    const entry = { name: subscriber, fn: fn as Handler<never> };
    list.push(entry);
    this.handlers.set(event, list);
    return () => {
      const current = this.handlers.get(event) ?? [];
      this.handlers.set(
        event,
        current.filter((e) => e !== entry),
      );
    };
  }

  async emit<K extends EventName>(event: K, payload: DomainEvents[K]): Promise<void> {
    const list = this.handlers.get(event);
    if (!list || list.length === 0) return;
    await Promise.all(
      list.map(async ({ name, fn }) => {
        try {
          await (fn as Handler<K>)(payload);
        } catch (err) {
          this.log.error({ err, event, subscriber: name }, 'event handler failed');
        }
      }),
    );
  }

  listenerCount(event: EventName): number {
    return this.handlers.get(event)?.length ?? 0;
  }
}
