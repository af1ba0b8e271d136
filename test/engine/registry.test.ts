import { expect } from 'chai';
import { systemClock } from '../../core/clock';
import { MemoryKvStore } from '../../core/kv';
import type { MessageHandler, Unsubscribe } from '../../core/kv';
import type { FunctionDescriptor } from '../../engine/functions';
import { FunctionRegistry } from '../../engine/registry';

/** The in-process store, keeping the gap handler a subscriber gave, to run it as a Redis reconnect would. */
class GapStore extends MemoryKvStore {
  onGap: (() => unknown) | undefined;

  override async subscribe(channel: string, handler: MessageHandler, onGap?: () => unknown): Promise<Unsubscribe> {
    this.onGap = onGap;
    return super.subscribe(channel, handler);
  }
}

const version = (status: 'active' | 'inactive'): FunctionDescriptor => ({
  id: 'fn_registry_race',
  name: 'registry-race',
  workspaceId: 'ws_registry',
  builtIn: false,
  executionType: 'external_api',
  status,
  isPublic: false,
  costPerUnit: '0.001',
  costMultiplier: '1',
  description: '',
  tags: [],
});

describe('engine: function registry reloads', () => {
  it('a change heard while a full reload after a gap is still reading is not overwritten by that older read', async () => {
    let stored = version('active');
    let answerAll: (() => void) | null = null;
    let slow = false;
    const source = {
      loadAll: async () => {
        // The read sees the table as it is now, and answers later (a big table).
        const seen = stored;
        if (slow) await new Promise<void>((resolve) => (answerAll = resolve));
        return [seen];
      },
      loadOne: async () => stored,
    };
    const kv = new GapStore(systemClock);
    const registry = new FunctionRegistry(source, kv);
    await registry.start();
    expect(registry.get('fn_registry_race')?.status).to.equal('active');

    slow = true;
    const gap = Promise.resolve(kv.onGap?.());
    // Meanwhile another instance deactivates the function and announces it.
    stored = version('inactive');
    await kv.publish('engine:function-changed', 'fn_registry_race');
    await new Promise((resolve) => setImmediate(resolve));
    (answerAll as (() => void) | null)?.();
    await gap;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(registry.get('fn_registry_race')?.status, 'the older full read overwrote the newer change').to.equal('inactive');
    await registry.stop();
    await kv.close();
  });
});
