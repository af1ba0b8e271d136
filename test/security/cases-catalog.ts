import { client } from '../support/http';
import type { SecurityCase } from '../support/security';
import type { TestService } from '../support/service';

/** A private draft function of the key's workspace; returns its id and name. */
async function privateFunction(svc: TestService, key: string): Promise<{ id: string; name: string }> {
  const name = `sec-catalog-${Date.now()}-${Math.floor(Math.random() * 1e6)}`;
  const res = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/functions', { name, execution_type: 'pipeline', cost_per_unit: '0.001' });
  if (res.status !== 201) throw new Error(`function creation failed: ${res.status} ${res.text}`);
  return { id: res.body.function.id as string, name };
}

/**
 * The catalogue routes take an optional credential: anonymous callers see the public listing, a
 * credential sees what it can reach, and a credential sent is checked like anywhere else.
 */
export const catalogSecurityCases: Record<string, SecurityCase> = {
  'catalog.list': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/catalog?search=${(await privateFunction(svc, w.a.key)).name}` }),
  },
  'catalog.read': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/catalog/${(await privateFunction(svc, w.a.key)).id}` }),
    cross: async (w, svc) => ({ path: `/api/catalog/${(await privateFunction(svc, w.b.key)).id}` }),
  },
};
