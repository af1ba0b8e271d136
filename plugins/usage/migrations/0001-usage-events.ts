import type { Migration } from '../../../core/db/migrations';

export const usageEvents: Migration = {
  name: '0001-usage-events',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE usage_events (
        id text PRIMARY KEY,
        -- No foreign key: usage is history and outlives what it refers to; the insert stays cheap on the hot path.
        workspace_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        request_id text,
        operation text NOT NULL CHECK (operation IN ('compute', 'batch_item', 'router', 'demo', 'verify', 'test')),
        channel text NOT NULL CHECK (channel IN ('api', 'mcp', 'demo')),
        status text NOT NULL CHECK (status IN ('ok', 'error')),
        error_code text,
        function_id text,
        function_name text,
        strategy text,
        price numeric(30, 8),
        currency text,
        confidence double precision,
        cost numeric(20, 8) NOT NULL DEFAULT 0,
        billable boolean NOT NULL DEFAULT false,
        paid_via text CHECK (paid_via IN ('x402', 'day_pass', 'balance')),
        outcome text CHECK (outcome IN ('accepted', 'rejected')),
        quality_score double precision CHECK (quality_score >= 0 AND quality_score <= 1),
        outcome_at timestamptz,
        caller_key_id text,
        caller_agent_id text,
        caller_person_id text,
        caller_user_agent text,
        caller_verified boolean NOT NULL DEFAULT false,
        caller_address_hash text,
        classification text NOT NULL CHECK (classification IN ('mine', 'testers', 'others')),
        cached boolean NOT NULL DEFAULT false,
        fallback_used boolean NOT NULL DEFAULT false,
        latency_ms double precision,
        context_keys jsonb NOT NULL DEFAULT '{}'::jsonb
      );
      CREATE INDEX usage_events_workspace_idx ON usage_events (workspace_id, created_at DESC, id DESC);
    `);
  },
  async down({ sequelize }) {
    await sequelize.query('DROP TABLE IF EXISTS usage_events');
  },
};
