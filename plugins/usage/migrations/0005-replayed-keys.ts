import type { Migration } from '../../../core/db/migrations';

/**
 * When a priced call's answer was first given again to a retry: a call replayed was delivered, so
 * a late not-delivered mark of it (its first caller left) leaves it charged; the mark finds the key
 * by its event.
 */
export const usageReplayedKeys: Migration = {
  name: '0005-replayed-keys',
  async up({ sequelize }) {
    await sequelize.query(`
      ALTER TABLE compute_idempotency_keys ADD COLUMN replayed_at timestamptz;
      CREATE INDEX compute_idempotency_keys_event_idx ON compute_idempotency_keys (usage_event_id);
    `);
  },
};
