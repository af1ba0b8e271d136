import { Sequelize } from 'sequelize';
import type { Logger } from '../logger';

export interface DatabaseOptions {
  url: string;
  poolMax: number;
  statementTimeoutMs: number;
}

/** The Sequelize instance of one service instance (never a module singleton). */
export function createSequelize(opts: DatabaseOptions, log: Logger): Sequelize {
  return new Sequelize(opts.url, {
    dialect: 'postgres',
    logging: (sql: string) => log.trace({ component: 'sql' }, sql),
    benchmark: false,
    pool: { max: opts.poolMax, min: 0, idle: 10_000, acquire: 10_000, evict: 5_000 },
    dialectOptions: { statement_timeout: opts.statementTimeoutMs || undefined, application_name: 'pricing-compute' },
    define: { underscored: true, timestamps: true, freezeTableName: true },
  });
}

/** Resolves when the database answers a trivial query within `timeoutMs`. */
export async function pingDatabase(sequelize: Sequelize, timeoutMs = 2000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([sequelize.query('SELECT 1'), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
