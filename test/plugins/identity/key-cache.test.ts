import { expect } from 'chai';
import { ManualClock } from '../../../core/clock';
import { MemoryKvStore } from '../../../core/kv';
import { KeyCache } from '../../../plugins/identity/services/key-cache';
import type { CachedKey } from '../../../plugins/identity/services/key-cache';

// Only what the cache reads of a key: its id and its workspace's.
const found = { key: { id: 'key_cache_1' }, workspace: { id: 'ws_cache_1' }, agentName: null, creatorStatus: 'active' } as unknown as CachedKey;

describe('identity: the verified-key cache', () => {
  const clock = new ManualClock(Date.parse('2026-11-27T00:00:00Z'));
  const kv = new MemoryKvStore(clock);
  after(() => kv.close());

  it('does not store a read begun before an invalidation (a revocation committed while the lookup read the database)', async () => {
    const cache = new KeyCache(kv, clock, 30_000, 100);
    const readAt = cache.generation;
    await cache.invalidate({ keyId: 'key_cache_1' });
    cache.set('hash-1', found, readAt);
    expect(cache.get('hash-1')).to.equal(undefined);
    // A read begun after it is stored.
    cache.set('hash-1', found, cache.generation);
    expect(cache.get('hash-1')).to.equal(found);
  });

  it('holds at most CREDENTIAL_CACHE_MAX_ENTRIES keys, unknown ones included: past it the oldest is dropped and read again when next used', () => {
    const cache = new KeyCache(kv, clock, 30_000, 3);
    for (const hash of ['made-up-1', 'made-up-2', 'made-up-3']) cache.set(hash, null);
    cache.set('real', found);
    expect(cache.get('made-up-1'), 'the oldest is gone').to.equal(undefined);
    expect(cache.get('made-up-2')).to.equal(null);
    expect(cache.get('real')).to.equal(found);
  });
});
