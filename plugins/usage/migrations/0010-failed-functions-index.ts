import type { Migration } from '../../../core/db/migrations';

/**
 * Others by a failed attempt: a function owner sees calls where its function was tried and failed
 * and another answered (or the call failed on another), found by `failed_function_ids @> [id]`.
 * GIN with jsonb_path_ops serves `@>`; partial, since the array is empty for nearly every call, so
 * the index stays small and the hot insert path rarely touches it.
 */
export const usageFailedFunctionsIndex: Migration = {
  name: '0010-failed-functions-index',
  async up({ sequelize }) {
    await sequelize.query("CREATE INDEX usage_events_failed_functions_idx ON usage_events USING gin (failed_function_ids jsonb_path_ops) WHERE failed_function_ids <> '[]'::jsonb");
  },
  async down({ sequelize }) {
    await sequelize.query('DROP INDEX IF EXISTS usage_events_failed_functions_idx');
  },
};
