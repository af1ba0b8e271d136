import { expect } from 'chai';
import { Client } from 'pg';
import { createSequelize } from '../../core/db/database';
import { runMigrations } from '../../core/db/migrations';
import { createLogger } from '../../core/logger';
import { builtInPlugins } from '../../plugins';
import { createTestDatabase } from '../support/db';
import { probePlugin } from '../support/probe-plugin';

async function schemaSnapshot(url: string): Promise<string> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const cols = await db.query(
      `SELECT table_name, column_name, data_type, is_nullable, column_default FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, column_name`,
    );
    const idx = await db.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY indexname`);
    return JSON.stringify([cols.rows, idx.rows]);
  } finally {
    await db.end();
  }
}

describe('migrations', () => {
  it('apply once; a second run changes nothing', async () => {
    const url = await createTestDatabase();
    const log = createLogger('silent');
    const plugins = [...builtInPlugins, probePlugin()].map((p) => ({ plugin: p.name, migrations: p.migrations ?? [] }));
    const sequelize = createSequelize({ url, poolMax: 2, statementTimeoutMs: 0 }, log);
    try {
      const first = await runMigrations(sequelize, url, plugins, log);
      expect(first).to.include('probe/0001-create-probe');
      const before = await schemaSnapshot(url);
      const second = await runMigrations(sequelize, url, plugins, log);
      expect(second).to.deep.equal([]);
      expect(await schemaSnapshot(url)).to.equal(before);
    } finally {
      await sequelize.close();
    }
  });

  it('serialise concurrent migrators with an advisory lock', async () => {
    const url = await createTestDatabase();
    const log = createLogger('silent');
    const plugins = [probePlugin()].map((p) => ({ plugin: p.name, migrations: p.migrations ?? [] }));
    const a = createSequelize({ url, poolMax: 2, statementTimeoutMs: 0 }, log);
    const b = createSequelize({ url, poolMax: 2, statementTimeoutMs: 0 }, log);
    try {
      const [ra, rb] = await Promise.all([runMigrations(a, url, plugins, log), runMigrations(b, url, plugins, log)]);
      expect([...ra, ...rb]).to.deep.equal(['probe/0001-create-probe']);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
