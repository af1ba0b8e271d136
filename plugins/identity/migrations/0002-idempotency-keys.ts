import type { Migration } from '../../../core/db/migrations';

/**
 * Idempotency keys of create routes: which resource the first request with a key created, and a
 * hash of its body. A row is written in the creating transaction, so it exists exactly when the
 * resource does; rows past IDEMPOTENCY_KEY_TTL_H are taken over by a new request, and pruned.
 */
export const identityIdempotencyKeys: Migration = {
  name: '0002-idempotency-keys',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE idempotency_keys (
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        scope text NOT NULL,
        key text NOT NULL,
        fingerprint text NOT NULL,
        resource_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, scope, key)
      );
      CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);
    `);
  },
};
