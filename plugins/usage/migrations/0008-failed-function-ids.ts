import type { Migration } from '../../../core/db/migrations';

/**
 * The functions that were tried and failed during a call, other than the one its event names: a
 * call rescued by a fallback names the function that answered, and without this its chosen
 * function's failure would count nowhere (leaderboard reliability). A JSON array of function ids,
 * empty for nearly every call.
 */
export const usageFailedFunctionIds: Migration = {
  name: '0008-failed-function-ids',
  async up({ sequelize }) {
    await sequelize.query("ALTER TABLE usage_events ADD COLUMN failed_function_ids jsonb NOT NULL DEFAULT '[]'::jsonb");
  },
  async down({ sequelize }) {
    await sequelize.query('ALTER TABLE usage_events DROP COLUMN IF EXISTS failed_function_ids');
  },
};
