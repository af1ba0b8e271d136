import type { Migration } from '../../../core/db/migrations';

/**
 * The usage API: tester tags (Settings), AI-feature usage (reported apart from compute usage) and
 * the indexes the viewer-relative event list needs (Testers: keyless calls; Others: calls to a
 * workspace's own functions).
 */
export const usageApi: Migration = {
  name: '0002-usage-api',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE usage_tester_tags (
        id text PRIMARY KEY,
        -- No foreign key, as usage_events: the usage plugin depends on identity only by its exports.
        workspace_id text NOT NULL,
        position integer NOT NULL,
        label text NOT NULL,
        user_agent_contains text,
        -- Hashes of the caller address as usage_events.caller_address_hash holds it (both IPv4 forms);
        -- the address itself is never stored, only a masked form to show.
        address_hashes text[],
        address_masked text,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK (user_agent_contains IS NOT NULL OR address_hashes IS NOT NULL)
      );
      CREATE INDEX usage_tester_tags_workspace_idx ON usage_tester_tags (workspace_id, position);

      CREATE TABLE ai_feature_usage (
        id text PRIMARY KEY,
        workspace_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        feature text NOT NULL CHECK (feature IN ('agent_generation', 'task_estimation')),
        key_source text NOT NULL CHECK (key_source IN ('own_provider_key', 'platform_key')),
        calls integer NOT NULL DEFAULT 1 CHECK (calls >= 0),
        tokens bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
        cost numeric(20, 8) NOT NULL DEFAULT 0 CHECK (cost >= 0),
        model text,
        request_id text
      );
      CREATE INDEX ai_feature_usage_workspace_idx ON ai_feature_usage (workspace_id, created_at);

      -- Others: calls by anyone to one workspace's functions, newest first.
      CREATE INDEX usage_events_function_idx ON usage_events (function_id, created_at DESC, id DESC) WHERE function_id IS NOT NULL;
      -- Testers: keyless calls (demo, MCP without a key), newest first, and by caller address.
      CREATE INDEX usage_events_keyless_idx ON usage_events (created_at DESC, id DESC) WHERE NOT caller_verified;
      CREATE INDEX usage_events_keyless_address_idx ON usage_events (caller_address_hash, created_at DESC) WHERE NOT caller_verified;
    `);
  },
  async down({ sequelize }) {
    await sequelize.query(`
      DROP INDEX IF EXISTS usage_events_keyless_address_idx;
      DROP INDEX IF EXISTS usage_events_keyless_idx;
      DROP INDEX IF EXISTS usage_events_function_idx;
      DROP TABLE IF EXISTS ai_feature_usage, usage_tester_tags;
    `);
  },
};
