import { Client } from 'pg';
import type { QueryInterface, Sequelize } from 'sequelize';
import { Umzug, SequelizeStorage } from 'umzug';
import type { Logger } from '../logger';

export interface MigrationContext {
  sequelize: Sequelize;
  queryInterface: QueryInterface;
}

/** One versioned migration file of a plugin. Names sort in the order they must run. */
export interface Migration {
  name: string;
  up(ctx: MigrationContext): Promise<void>;
  down?(ctx: MigrationContext): Promise<void>;
}

export interface PluginMigrations {
  plugin: string;
  migrations: readonly Migration[];
}

const LOCK_KEY = 727_001; // advisory lock id: one migrator at a time across instances

/**
 * Runs the pending migrations of the given plugins, in plugin order then name order, under a
 * PostgreSQL advisory lock so instances starting together do not race. Already-applied migrations
 * are recorded in `schema_migrations` and skipped, so running twice changes nothing.
 */
export async function runMigrations(sequelize: Sequelize, url: string, plugins: readonly PluginMigrations[], log: Logger): Promise<string[]> {
  const lock = new Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
    const ctx: MigrationContext = { sequelize, queryInterface: sequelize.getQueryInterface() };
    const umzug = new Umzug<MigrationContext>({
      migrations: plugins.flatMap((p) =>
        [...p.migrations]
          .sort((a, b) => a.name.localeCompare(b.name))
          .map((m) => ({
            name: `${p.plugin}/${m.name}`,
            up: async () => m.up(ctx),
            down: async () => m.down?.(ctx),
          })),
      ),
      context: ctx,
      storage: new SequelizeStorage({ sequelize, tableName: 'schema_migrations' }),
      logger: undefined,
    });
    const applied = await umzug.up();
    const names = applied.map((m) => m.name);
    if (names.length > 0) log.info({ migrations: names }, 'migrations applied');
    return names;
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [LOCK_KEY]).catch(() => undefined);
    await lock.end();
  }
}
