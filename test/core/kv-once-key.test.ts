import { expect } from 'chai';
import slot from 'cluster-key-slot';
import { onceKey } from '../../core/kv/contract';

describe('key-value store: the key of a count made once', () => {
  for (const key of ['pcs:allowance:ws_1:2026-11-27', '{pcs}:allowance:ws_1:2026-11-27', 'pcs:{ws_1}:allowance']) {
    it(`shares the Redis Cluster slot of its counter ${key}, so one script may touch both`, () => {
      const marker = onceKey(key, 'tok123');
      expect(marker).to.include('tok123');
      expect(marker).to.not.equal(key);
      expect(slot(marker)).to.equal(slot(key));
    });
  }
});
