import { Client, Pool } from 'pg';
import type { ClientConfig } from 'pg';
import { Sequelize } from 'sequelize';
import { MAX_TIMER_MS } from '../../config/settings';
import type { Logger } from '../logger';

export interface DatabaseOptions {
  url: string;
  poolMax: number;
  statementTimeoutMs: number;
  /** DB_ANSWER_GRACE_MS: how much longer than the statement timeout the client waits for an answer. */
  answerGraceMs?: number;
  connectTimeoutMs?: number;
  /** DB_ACQUIRE_TIMEOUT_MS: longest a statement waits for a connection of the pool, free or new. */
  acquireTimeoutMs?: number;
}

/**
 * node-postgres settings of every connection the service opens: the database's statement timeout,
 * and on the client's side a bound a little beyond it (query_timeout), which holds when the
 * database cannot enforce its own: a frozen server or a partitioned network would otherwise hold
 * a request, and its connection, for as long as the TCP connection lives.
 */
export function connectionTimeouts(opts: Pick<DatabaseOptions, 'statementTimeoutMs' | 'answerGraceMs' | 'connectTimeoutMs'>): {
  statement_timeout?: number;
  query_timeout?: number;
  connectionTimeoutMillis?: number;
} {
  const statement = opts.statementTimeoutMs > 0 ? opts.statementTimeoutMs : undefined;
  return {
    statement_timeout: statement,
    query_timeout: statement !== undefined && opts.answerGraceMs !== undefined ? Math.min(MAX_TIMER_MS, statement + opts.answerGraceMs) : undefined,
    connectionTimeoutMillis: opts.connectTimeoutMs,
  };
}

const DEFAULT_ACQUIRE_MS = 10_000;

/**
 * The pool of the hot path's own statements (the usage writer's inserts), node-postgres without
 * Sequelize. pg-pool's connectionTimeoutMillis bounds the wait for a connection, free or new: it
 * takes DB_ACQUIRE_TIMEOUT_MS, like Sequelize's acquire, so a busy but healthy database does not
 * answer 503 sooner than elsewhere; opening a connection itself is bounded by DB_CONNECT_TIMEOUT_MS
 * in the client.
 */
export function createHotPool(opts: Omit<DatabaseOptions, 'poolMax'> & { applicationName: string; max: number }): Pool {
  const { connectionTimeoutMillis, ...timeouts } = connectionTimeouts(opts);
  class BoundedClient extends Client {
    constructor(config: ClientConfig = {}) {
      super({ ...config, connectionTimeoutMillis });
    }
  }
  return new Pool({
    connectionString: opts.url,
    max: opts.max,
    application_name: opts.applicationName,
    ...timeouts,
    connectionTimeoutMillis: opts.acquireTimeoutMs ?? DEFAULT_ACQUIRE_MS,
    Client: BoundedClient,
  });
}

/** The Sequelize instance of one service instance (never a module singleton). */
export function createSequelize(opts: DatabaseOptions, log: Logger): Sequelize {
  return new Sequelize(opts.url, {
    dialect: 'postgres',
    logging: (sql: string) => log.trace({ component: 'sql' }, sql),
    benchmark: false,
    pool: { max: opts.poolMax, min: 0, idle: 10_000, acquire: opts.acquireTimeoutMs ?? DEFAULT_ACQUIRE_MS, evict: 5_000 },
    dialectOptions: { ...connectionTimeouts(opts), application_name: 'pricing-compute' },
    define: { underscored: true, timestamps: true, freezeTableName: true },
  });
}

/**
 * Resolves when the database answers a trivial query within `timeoutMs` on each pool: Sequelize's, and the hot
 * path's (the usage writer's) when given. Each pool needs its own check: one may hold a live connection while the
 * other cannot open one (a database shutting down, or refusing new connections, serves open sessions only), and a
 * priced call, which cannot be answered without its usage record, depends on the hot pool.
 */
export async function pingDatabase(sequelize: Sequelize, hotPool?: Pool, timeoutMs = 2000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([Promise.all([sequelize.query('SELECT 1'), hotPool?.query('SELECT 1')]), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
