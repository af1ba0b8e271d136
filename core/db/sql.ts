import { QueryTypes } from 'sequelize';
import type { Sequelize, Transaction } from 'sequelize';
import { isUnansweredStatement } from './failures';

/**
 * Thin typed access to SQL through Sequelize: bound parameters ($1…) only, never string
 * concatenation of values. Repositories use it so queries stay explicit and cheap.
 */
export class Sql {
  constructor(readonly sequelize: Sequelize) {}

  async many<T extends object>(sql: string, bind: unknown[] = [], transaction?: Transaction): Promise<T[]> {
    return this.sequelize.query<T>(sql, { bind, type: QueryTypes.SELECT, ...(transaction ? { transaction } : {}) });
  }

  async one<T extends object>(sql: string, bind: unknown[] = [], transaction?: Transaction): Promise<T | null> {
    const rows = await this.many<T>(sql, bind, transaction);
    return rows[0] ?? null;
  }

  /** Runs a statement; returns the number of rows it affected. */
  async exec(sql: string, bind: unknown[] = [], transaction?: Transaction): Promise<number> {
    const [, meta] = await this.sequelize.query(sql, { bind, ...(transaction ? { transaction } : {}) });
    const count = (meta as { rowCount?: number } | undefined)?.rowCount;
    return typeof count === 'number' ? count : 0;
  }

  /**
   * Runs `work` in a transaction, committed when it resolves and rolled back when it throws. A
   * statement given up on without an answer (DB_STATEMENT_TIMEOUT_MS + DB_ANSWER_GRACE_MS on the
   * client's side) still occupies its connection: a ROLLBACK would queue behind it and wait out the
   * same bound again, so the connection is closed instead, which the server takes as a rollback.
   * A COMMIT that fails has Sequelize close the connection itself.
   */
  async tx<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
    const t = await this.sequelize.transaction();
    let result: T;
    try {
      result = await work(t);
    } catch (err) {
      await (isUnansweredStatement(err) ? (t as unknown as { forceCleanup(): Promise<void> }).forceCleanup() : t.rollback()).catch(() => undefined);
      throw err;
    }
    await t.commit();
    return result;
  }
}

/**
 * Whether `err` is PostgreSQL's unique violation (23505) on the named index or constraint: the
 * answer to two writers that both passed a "not taken yet" check before either committed.
 */
export function isUniqueViolation(err: unknown, constraint: string): boolean {
  const parent = (err as { parent?: { code?: unknown; constraint?: unknown } } | null)?.parent;
  return parent?.code === '23505' && parent.constraint === constraint;
}
