import { expect } from 'chai';
import { systemClock } from '../../core/clock';
import { MemoryKvStore } from '../../core/kv';
import type { CallerScope, FunctionDescriptor } from '../../engine/functions';
import { isReachable } from '../../engine/functions';
import { FunctionRegistry } from '../../engine/registry';

const fn = (id: string, workspaceId: string, isPublic: boolean, status: FunctionDescriptor['status']): FunctionDescriptor => ({
  id,
  name: `name-${id}`,
  workspaceId,
  builtIn: false,
  executionType: 'external_api',
  status,
  isPublic,
  costPerUnit: '0.001',
  costMultiplier: '1',
  description: '',
  tags: [],
});

/** A table of functions the registry loads from; `changed` ids are read again as another instance announced them. */
function tableSource(rows: Map<string, FunctionDescriptor>) {
  return { loadAll: async () => [...rows.values()], loadOne: async (id: string) => rows.get(id) ?? null };
}

describe('engine: function registry index', () => {
  it('reachable(scope) reads built-ins, the workspace\'s own and the public active functions, not other workspaces\' private ones', async () => {
    let reads = 0;
    const counted = (d: FunctionDescriptor): FunctionDescriptor => {
      const o = {} as FunctionDescriptor;
      for (const [k, v] of Object.entries(d)) {
        Object.defineProperty(o, k, {
          enumerable: true,
          get: () => {
            reads++;
            return v as unknown;
          },
        });
      }
      return o;
    };
    const rows = new Map<string, FunctionDescriptor>();
    for (let i = 0; i < 500; i++) rows.set(`fn_other_${i}`, counted(fn(`fn_other_${i}`, `ws_other_${i % 7}`, false, 'active')));
    rows.set('fn_mine', fn('fn_mine', 'ws_mine', false, 'draft'));
    rows.set('fn_listed', fn('fn_listed', 'ws_seller', true, 'active'));
    const registry = new FunctionRegistry(tableSource(rows), new MemoryKvStore(systemClock));
    await registry.start();

    reads = 0;
    const ids = registry.reachable({ workspaceId: 'ws_mine', builtInsOnly: false }).map((f) => f.id);
    const own = registry.ownAndBuiltIn({ workspaceId: 'ws_mine', builtInsOnly: false }).map((f) => f.id);
    expect(reads, 'fields of other workspaces\' private functions read by one call').to.equal(0);
    expect(ids).to.include.members(['fn_mine', 'fn_listed']);
    expect(ids.filter((id) => id.startsWith('fn_other_'))).to.deep.equal([]);
    expect(own).to.include('fn_mine').and.not.include('fn_listed');
  });

  it('reachable and ownAndBuiltIn list what a walk of every function lists, in its order, through changes, removals and full reloads', async () => {
    const rows = new Map<string, FunctionDescriptor>();
    const workspaces = ['ws_a', 'ws_b', 'ws_c'];
    const statuses: FunctionDescriptor['status'][] = ['draft', 'active', 'inactive'];
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const pick = <T>(xs: readonly T[]): T => xs[rnd(xs.length)] as T;
    for (let i = 0; i < 40; i++) rows.set(`fn_${i}`, fn(`fn_${i}`, pick(workspaces), rnd(2) === 0, pick(statuses)));
    const kv = new MemoryKvStore(systemClock);
    const registry = new FunctionRegistry(tableSource(rows), kv);
    await registry.start();
    const scopes: CallerScope[] = [...workspaces.map((w) => ({ workspaceId: w, builtInsOnly: false })), { workspaceId: 'ws_a', builtInsOnly: true }, { workspaceId: 'ws_none', builtInsOnly: false }];
    const check = (step: number) => {
      for (const scope of scopes) {
        const walk = registry.all().filter((f) => isReachable(f, scope));
        expect(registry.reachable(scope).map((f) => f.id), `reachable, step ${step}, ${JSON.stringify(scope)}`).to.deep.equal(walk.map((f) => f.id));
        expect(registry.ownAndBuiltIn(scope).map((f) => f.id), `ownAndBuiltIn, step ${step}`).to.deep.equal(walk.filter((f) => f.builtIn || f.workspaceId === scope.workspaceId).map((f) => f.id));
      }
    };
    check(0);
    for (let step = 1; step <= 200; step++) {
      const id = `fn_${rnd(50)}`;
      const op = rnd(10);
      const current = rows.get(id);
      if (op === 0) rows.delete(id);
      else if (op === 1 || !current) rows.set(id, fn(id, pick(workspaces), rnd(2) === 0, pick(statuses)));
      else rows.set(id, { ...current, isPublic: rnd(2) === 0, status: pick(statuses) });
      await registry.changed(id);
      if (step % 50 === 0) {
        // A full read, as after a gap in the change announcements.
        for (const [k, v] of [...rows]) if (rnd(3) === 0) rows.set(k, { ...v, status: pick(statuses) });
        await (registry as unknown as { reloadAll(): Promise<void> }).reloadAll();
      }
      check(step);
    }
  });

  it('keeps the registry order for a function moved into a workspace, in ownAndBuiltIn as in reachable', async () => {
    const rows = new Map<string, FunctionDescriptor>([
      ['fn_a', fn('fn_a', 'ws_a', false, 'active')],
      ['fn_b', fn('fn_b', 'ws_b', false, 'active')],
      ['fn_c', fn('fn_c', 'ws_a', false, 'active')],
    ]);
    const registry = new FunctionRegistry(tableSource(rows), new MemoryKvStore(systemClock));
    await registry.start();
    rows.set('fn_b', fn('fn_b', 'ws_a', false, 'active'));
    await registry.changed('fn_b');
    const scope = { workspaceId: 'ws_a', builtInsOnly: false };
    const mine = (fns: FunctionDescriptor[]) => fns.filter((f) => !f.builtIn).map((f) => f.id);
    expect(mine(registry.ownAndBuiltIn(scope))).to.deep.equal(['fn_a', 'fn_b', 'fn_c']);
    expect(mine(registry.reachable(scope))).to.deep.equal(['fn_a', 'fn_b', 'fn_c']);
  });
});
