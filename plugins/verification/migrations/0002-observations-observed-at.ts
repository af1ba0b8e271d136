import type { Migration } from '../../../core/db/migrations';

/** The retention prune finds observations by observed_at alone (OBSERVATIONS_RETENTION_DAYS). */
export const verificationObservedAtIndex: Migration = {
  name: '0002-observations-observed-at',
  async up({ sequelize }) {
    await sequelize.query('CREATE INDEX IF NOT EXISTS price_observations_observed_idx ON price_observations (observed_at)');
  },
  async down({ sequelize }) {
    await sequelize.query('DROP INDEX IF EXISTS price_observations_observed_idx');
  },
};
