import 'reflect-metadata';
import { stopTestDatabaseServer } from './support/db';

/** Root hooks: the embedded PostgreSQL started for the suite is stopped at the end. */
export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    // The stop steps take 15 s at most; deleting the cluster's directory after them took long enough on a loaded machine
    // (a CI run beside other work) to fail the whole run at 30 s.
    this.timeout(60_000);
    await stopTestDatabaseServer();
  },
};
