import 'reflect-metadata';
import { stopTestDatabaseServer } from './support/db';

/** Root hooks: the embedded PostgreSQL started for the suite is stopped at the end. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(30_000);
    await stopTestDatabaseServer();
  },
};
