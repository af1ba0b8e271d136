import type { Migration } from '../../../core/db/migrations';

/**
 * Test runs of functions a workspace does not own, counted per UTC day (FUNCTION_TEST_RUNS_PER_DAY):
 * a test run writes no usage event, so the count is kept here, where every instance sees it and a
 * restart does not reset it.
 */
export const functionTestRuns: Migration = {
  name: '0002-function-test-runs',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE function_test_runs (
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        day date NOT NULL,
        runs integer NOT NULL CHECK (runs >= 0),
        PRIMARY KEY (workspace_id, day)
      );
      CREATE INDEX function_test_runs_day_idx ON function_test_runs (day);
    `);
  },
  async down({ sequelize }) {
    await sequelize.query('DROP TABLE IF EXISTS function_test_runs');
  },
};
