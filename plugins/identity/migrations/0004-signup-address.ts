import type { Migration } from '../../../core/db/migrations';

/**
 * The address a person signed up from, as a digest of the address the per-address sign-up limit
 * counted (core/address.ts): the record that limit is rebuilt from when the key-value store lost
 * its count (a restart without Redis), as agents' registered_from_hash is for registrations.
 */
export const identitySignupAddress: Migration = {
  name: '0004-signup-address',
  async up({ sequelize }) {
    await sequelize.query(`
      ALTER TABLE people ADD COLUMN signed_up_from_hash text;
      CREATE INDEX people_signed_up_from_idx ON people (signed_up_from_hash, created_at) WHERE signed_up_from_hash IS NOT NULL;
      CREATE INDEX people_created_at_idx ON people (created_at);
    `);
  },
};
