import { expect } from 'chai';
import { Client } from 'pg';
import { PluginLoadError, resolvePluginOrder } from '../../core/plugin';
import type { PluginDefinition } from '../../core/plugin';
import { probePlugin } from '../support/probe-plugin';
import { startTestService } from '../support/service';
import { createTestDatabase } from '../support/db';
import { client } from '../support/http';

const p = (name: string, dependsOn: string[] = []): PluginDefinition => ({ name, description: name, dependsOn, register: () => undefined });

describe('plugin loader', () => {
  it('orders plugins after their dependencies', () => {
    const order = resolvePluginOrder([p('usage', ['identity', 'pricing']), p('pricing', ['identity']), p('identity')], ['usage', 'pricing', 'identity']);
    expect(order.map((x) => x.name)).to.deep.equal(['identity', 'pricing', 'usage']);
  });

  it('refuses an unknown plugin, naming it and the available ones', () => {
    expect(() => resolvePluginOrder([p('a')], ['a', 'nope'])).to.throw(PluginLoadError, /Unknown plugin "nope".*Available: a/);
    // A misspelt name gets the one it most likely meant.
    expect(() => resolvePluginOrder([p('identity'), p('pricing')], ['idnetity', 'pricing'])).to.throw(PluginLoadError, 'Unknown plugin "idnetity" (did you mean "identity"?) in PLUGINS. Available: identity, pricing.');
  });

  it('refuses a dependency that is not enabled', () => {
    expect(() => resolvePluginOrder([p('a', ['b']), p('b')], ['a'])).to.throw(PluginLoadError, /A dependency is not enabled: "b" \(needed by a\)\. Add it to PLUGINS \(PLUGINS=a,b\)/);
  });

  it('names every missing dependency in one message, transitively (PLUGINS=health,mcp)', () => {
    const available = [p('health'), p('identity'), p('usage', ['identity']), p('pricing', ['identity', 'usage']), p('discovery', ['identity']), p('mcp', ['identity', 'pricing', 'discovery'])];
    let err: Error | undefined;
    try {
      resolvePluginOrder(available, ['health', 'mcp']);
    } catch (e) {
      err = e as Error;
    }
    expect(err).to.be.instanceOf(PluginLoadError);
    expect(err?.message).to.equal(
      '4 dependencies are not enabled: "identity" (needed by mcp, pricing, discovery, usage), "pricing" (needed by mcp), "discovery" (needed by mcp), "usage" (needed by pricing). Add them to PLUGINS (PLUGINS=health,mcp,identity,pricing,discovery,usage) or remove the plugins that need them.',
    );
    expect(resolvePluginOrder(available, ['health', 'mcp', 'identity', 'pricing', 'discovery', 'usage']).map((x) => x.name)).to.include('mcp');
  });

  it('refuses a dependency that does not exist', () => {
    expect(() => resolvePluginOrder([p('a', ['ghost'])], ['a'])).to.throw(PluginLoadError, /"a" depends on "ghost", which does not exist/);
  });

  it('refuses a cycle and prints it', () => {
    expect(() => resolvePluginOrder([p('a', ['b']), p('b', ['c']), p('c', ['a'])], ['a', 'b', 'c'])).to.throw(PluginLoadError, /cycle: a -> b -> c -> a/);
  });

  it('stops start-up when a dependency is missing', async () => {
    let err: unknown;
    try {
      await startTestService({ extraPlugins: [probePlugin({ dependsOn: ['ghost-dep'] })], enabled: ['health', 'probe'] });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(PluginLoadError);
  });

  it('leaves a disabled plugin without routes and without migrations', async () => {
    const databaseUrl = await createTestDatabase();
    const svc = await startTestService({ databaseUrl, extraPlugins: [probePlugin()], enabled: ['health'] });
    try {
      const res = await client(svc.url).post('/probe/items', { label: 'x' });
      expect(res.status).to.equal(404);
      expect(svc.routes.all().some((r) => r.plugin === 'probe')).to.equal(false);
      const db = new Client({ connectionString: databaseUrl });
      await db.connect();
      try {
        const tables = await db.query(`SELECT to_regclass('public.probe_items') AS t`);
        expect(tables.rows[0].t).to.equal(null);
        const applied = await db.query(`SELECT name FROM schema_migrations WHERE name LIKE 'probe/%'`);
        expect(applied.rowCount).to.equal(0);
      } finally {
        await db.end();
      }
    } finally {
      await svc.close();
    }
  });
});
