import type { Migration } from '../../../core/db/migrations';

/**
 * The address an agent registered its sandbox from, as a digest (core/address.ts): the record the
 * per-address daily registration limit is rebuilt from when the key-value store lost its count (a
 * restart without Redis), as the overall limit is from the workspaces of the day.
 */
export const identityRegistrationAddress: Migration = {
  name: '0003-registration-address',
  async up({ sequelize }) {
    await sequelize.query(`
      ALTER TABLE agents ADD COLUMN registered_from_hash text;
      CREATE INDEX agents_registered_from_idx ON agents (registered_from_hash, created_at) WHERE registered_from_hash IS NOT NULL;
    `);
  },
};
