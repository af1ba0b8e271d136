import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import type { Sql } from '../../../core/db/sql';
import { MemoryKvStore } from '../../../core/kv/memory';
import { PolicyStore } from '../../../plugins/pricing/services/policy-store';

const row = (id: string) => ({ id, workspace_id: 'ws_1', name: id, strategy: 'cheapest', is_default: true, fallback_chain: [], fallback_function: null, config: {}, created_at: new Date(), updated_at: new Date() });

describe('pricing: the cached default policy', () => {
  it('a read overtaken by a change is not cached: the next compute reads the new default', async () => {
    const clock = new ManualClock();
    const kv = new MemoryKvStore(clock);
    const reads: Array<(r: unknown) => void> = [];
    const sql = { one: () => new Promise((resolve) => reads.push(resolve)) } as unknown as Sql;
    const store = new PolicyStore(sql, kv, clock, 100, 100);
    await store.start();
    try {
      const first = store.defaultFor('ws_1');
      // Another instance (or this one) changes the default while that read is in flight.
      await kv.publish('pricing:policy-changed', 'ws_1');
      reads[0]?.(row('rp_old'));
      expect((await first)?.id).to.equal('rp_old');
      const second = store.defaultFor('ws_1');
      expect(reads).to.have.length(2);
      reads[1]?.(row('rp_new'));
      expect((await second)?.id).to.equal('rp_new');
      // Undisturbed, a read is cached.
      expect((await store.defaultFor('ws_1'))?.id).to.equal('rp_new');
      expect(reads).to.have.length(2);
    } finally {
      await store.stop();
      await kv.close();
    }
  });

  it('holds at most ROUTING_POLICY_CACHE_MAX_ENTRIES workspaces: past it the oldest is read from the database again', async () => {
    const clock = new ManualClock();
    const kv = new MemoryKvStore(clock);
    const reads: string[] = [];
    const sql = {
      one: (_text: string, params: unknown[]) => {
        reads.push(String(params[0]));
        return Promise.resolve(null);
      },
    } as unknown as Sql;
    const store = new PolicyStore(sql, kv, clock, 100, 2);
    try {
      for (const ws of ['ws_1', 'ws_2', 'ws_1', 'ws_2']) expect(await store.defaultFor(ws)).to.equal(null);
      expect(reads).to.deep.equal(['ws_1', 'ws_2']);
      await store.defaultFor('ws_3');
      await store.defaultFor('ws_2');
      await store.defaultFor('ws_1');
      expect(reads).to.deep.equal(['ws_1', 'ws_2', 'ws_3', 'ws_1']);
    } finally {
      await kv.close();
    }
  });
});
