import type { Migration } from '../../../core/db/migrations';

/**
 * The Idempotency-Key of the batch a batch item's claim belongs to (the item's own key is the
 * batch's with its index): a single call under a batch's key, and a batch under a single call's
 * key or with another body, find the batch's claims by it. Null for a single call.
 */
export const usageBatchKeys: Migration = {
  name: '0006-batch-keys',
  async up({ sequelize }) {
    await sequelize.query(`
      ALTER TABLE compute_idempotency_keys ADD COLUMN batch_key text;
      CREATE INDEX compute_idempotency_keys_batch_idx ON compute_idempotency_keys (workspace_id, batch_key) WHERE batch_key IS NOT NULL;
    `);
  },
};
