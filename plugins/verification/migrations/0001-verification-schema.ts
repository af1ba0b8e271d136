import type { Migration } from '../../../core/db/migrations';

/**
 * Price observations: data contributions of workspaces and the prices of accepted compute
 * outcomes. Verification reads them by product type (case-insensitive), currency and recency.
 */
export const verificationSchema: Migration = {
  name: '0001-verification-schema',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE price_observations (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        product_type text NOT NULL,
        currency text NOT NULL,
        amount numeric NOT NULL CHECK (amount > 0),
        observed_at timestamptz NOT NULL,
        source text NOT NULL,
        origin text NOT NULL CHECK (origin IN ('contribution', 'accepted_outcome')),
        -- One observation per accepted usage event (NULLs are distinct, so contributions are unaffected).
        usage_event_id text UNIQUE,
        context jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX price_observations_match_idx ON price_observations (lower(product_type), currency, observed_at DESC);
      CREATE INDEX price_observations_workspace_idx ON price_observations (workspace_id, created_at DESC, id DESC);
    `);
  },
  async down({ sequelize }) {
    await sequelize.query('DROP TABLE IF EXISTS price_observations');
  },
};
