import type { Migration } from '../../../core/db/migrations';

/**
 * Idempotency keys of priced calls: the usage event the first call with a key recorded, a hash of
 * its request, and its answer without the parts rebuilt on replay (receipt, remaining allowance,
 * next actions). A row is written by the same statement as its usage event, so it exists exactly
 * when a charged event does; rows past IDEMPOTENCY_KEY_TTL_H are taken over by a new call, and pruned.
 */
export const usageComputeIdempotencyKeys: Migration = {
  name: '0004-compute-idempotency-keys',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE compute_idempotency_keys (
        workspace_id text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        usage_event_id text NOT NULL,
        response jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, key)
      );
      CREATE INDEX compute_idempotency_keys_created_idx ON compute_idempotency_keys (created_at);
    `);
  },
};
