import type { Migration } from '../../../core/db/migrations';

/**
 * The events list's `request_id` filter: a workspace finds its own call by the request id of the
 * answer (a failed one included) without reading its whole history.
 */
export const usageRequestIdIndex: Migration = {
  name: '0007-request-id-index',
  async up({ sequelize }) {
    await sequelize.query('CREATE INDEX usage_events_request_idx ON usage_events (workspace_id, request_id) WHERE request_id IS NOT NULL');
  },
  async down({ sequelize }) {
    await sequelize.query('DROP INDEX IF EXISTS usage_events_request_idx');
  },
};
