import type { Migration } from '../../../core/db/migrations';

/**
 * Which signing secret an external function's requests carry: the secret itself is derived from the service's signing
 * key and this generation (services/request-signing.ts), so nothing secret is stored per function; a rotation adds 1.
 */
export const functionSigning: Migration = {
  name: '0003-function-signing',
  async up({ sequelize }) {
    await sequelize.query('ALTER TABLE pricing_functions ADD COLUMN signing_generation integer NOT NULL DEFAULT 1 CHECK (signing_generation >= 1)');
  },
  async down({ sequelize }) {
    await sequelize.query('ALTER TABLE pricing_functions DROP COLUMN IF EXISTS signing_generation');
  },
};
