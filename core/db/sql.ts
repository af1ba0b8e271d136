import { QueryTypes } from 'sequelize';
import type { Sequelize, Transaction } from 'sequelize';

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

  /** Runs `work` in a transaction, committed when it resolves and rolled back when it throws. */
  async tx<T>(work: (t: Transaction) => Promise<T>): Promise<T> {
    return this.sequelize.transaction(work);
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
