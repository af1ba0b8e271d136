import type { Migration } from '../../../core/db/migrations';

export const DEMO_WORKSPACE_ID = 'ws_public_demo';

export const pricingSchema: Migration = {
  name: '0001-pricing-schema',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE pricing_functions (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        tags text[] NOT NULL DEFAULT '{}',
        execution_type text NOT NULL CHECK (execution_type IN ('external_api', 'pipeline')),
        status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'active', 'inactive')),
        is_public boolean NOT NULL DEFAULT false,
        cost_per_unit numeric(20, 8) NOT NULL CHECK (cost_per_unit >= 0),
        cost_multiplier numeric(12, 6) NOT NULL DEFAULT 1 CHECK (cost_multiplier >= 0),
        endpoint_url text,
        timeout_ms integer,
        pipeline_id text,
        commission_pct numeric(5, 2),
        listed_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX pricing_functions_name_idx ON pricing_functions (lower(name));
      CREATE INDEX pricing_functions_workspace_idx ON pricing_functions (workspace_id, created_at DESC);

      CREATE TABLE routing_policies (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name text NOT NULL,
        strategy text NOT NULL,
        is_default boolean NOT NULL DEFAULT false,
        fallback_chain text[] NOT NULL DEFAULT '{}',
        fallback_function text,
        config jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX routing_policies_one_default ON routing_policies (workspace_id) WHERE is_default;
      CREATE INDEX routing_policies_workspace_idx ON routing_policies (workspace_id, created_at DESC);

      INSERT INTO workspaces (id, name, plan, origin, is_sandbox) VALUES ('${DEMO_WORKSPACE_ID}', 'Public demo', 'agent_starter', 'created', true)
      ON CONFLICT (id) DO NOTHING;
    `);
  },
  async down({ sequelize }) {
    await sequelize.query('DROP TABLE IF EXISTS routing_policies, pricing_functions');
  },
};
