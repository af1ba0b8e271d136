import type { Migration } from '../../../core/db/migrations';

/**
 * A usage event keeps its price exactly as the call answered it: a proposed price may carry up to 18
 * decimals (docs/verification.md), and numeric(30, 8) rounded it when stored (a positive 0.000000001
 * became 0). Unconstrained numeric, as price observations are.
 */
export const usageExactPrices: Migration = {
  name: '0009-exact-prices',
  async up({ sequelize }) {
    await sequelize.query('ALTER TABLE usage_events ALTER COLUMN price TYPE numeric');
  },
  async down({ sequelize }) {
    await sequelize.query('ALTER TABLE usage_events ALTER COLUMN price TYPE numeric(30, 8)');
  },
};
