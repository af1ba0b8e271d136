import 'reflect-metadata';
import { stopTestDatabaseServer } from './support/db';

/** Root hooks: the embedded PostgreSQL started for the suite is stopped at the end. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    // The stop steps take 15 s at most (the cluster's directory is deleted by a process of its own, not waited for).
    this.timeout(60_000);
    await stopTestDatabaseServer();
  },
};
