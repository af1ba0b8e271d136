import type { Service } from '../core/service';
import type { Target } from './load-worker';

/** One comparison: a service route against the bare route, under the same load. */
export interface Scenario {
  name: string;
  service: Target;
  bare: Target;
  /** Include in the sequential (one request at a time) overhead run. */
  sequential?: boolean;
  /** The bare route plus the durable usage-event write the service route must also make (sequential run). */
  floor?: Target;
}

export interface BenchContext {
  service: Service;
  bareUrl: string;
}

/** Later issues add their routes here; each setup may prepare data (keys, functions) first. */
export async function buildScenarios(ctx: BenchContext): Promise<Scenario[]> {
  const svc = ctx.service.url;
  /** Keys made by one setup that a later one reuses. */
  const keyFor: { compute?: string } = {};
  const scenarios: Scenario[] = [
    {
      name: 'GET /healthz (kernel pipeline, public route)',
      service: { url: `${svc}/healthz`, method: 'GET' },
      bare: { url: `${ctx.bareUrl}/bare`, method: 'GET' },
      sequential: true,
    },
  ];
  if (ctx.service.plugins.includes('identity')) {
    const reg = await fetch(`${svc}/api/agents/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench-agent' }) });
    const key = ((await reg.json()) as { api_key: { key: string } }).api_key.key;
    scenarios.push({
      name: 'GET /api/me (API key verified, rate limits counted)',
      service: { url: `${svc}/api/me`, method: 'GET', headers: { 'x-api-key': key } },
      bare: { url: `${ctx.bareUrl}/bare`, method: 'GET' },
      sequential: true,
    });
  }
  if (ctx.service.plugins.includes('pricing') && ctx.service.plugins.includes('accounts')) {
    const signup = await fetch(`${svc}/api/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: `bench-${Date.now()}@example.com`, password: 'correct horse battery', date_of_birth: '1990-01-01' }),
    });
    const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const created = await fetch(`${svc}/api/api-keys`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ name: 'bench' }) });
    const key = ((await created.json()) as { api_key: { key: string } }).api_key.key;
    keyFor.compute = key;
    const body = JSON.stringify({ context: { product_type: 'coffee', currency: 'USD', unit_cost: 1.2, target_margin: 0.6 }, function_id: 'fn_builtin_cost_plus' });
    scenarios.push({
      name: 'POST /api/compute/price (key, built-in cost-plus in the worker pool, usage event written, cache off)',
      service: { url: `${svc}/api/compute/price`, method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body, traced: true },
      bare: { url: `${ctx.bareUrl}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body },
      floor: { url: `${ctx.bareUrl}/bare-commit`, method: 'POST', headers: { 'content-type': 'application/json' }, body },
      sequential: true,
    });
    scenarios.push({
      name: 'POST /api/compute/price with a fresh Idempotency-Key per call (key looked up, claimed in the usage insert)',
      service: { url: `${svc}/api/compute/price`, method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body, traced: true, freshHeader: 'idempotency-key' },
      bare: { url: `${ctx.bareUrl}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body },
      floor: { url: `${ctx.bareUrl}/bare-commit`, method: 'POST', headers: { 'content-type': 'application/json' }, body },
      sequential: true,
    });
  }
  if (ctx.service.plugins.includes('verification') && ctx.service.plugins.includes('accounts')) {
    // Seed a few observations from two workspaces through the API, so the verdict is two-sided.
    const now = Date.now();
    for (const [label, source, amounts] of [
      ['a', 'shelf-scan', ['4.40', '4.55', '4.60']],
      ['b', 'competitor-site', ['4.45', '4.50', '4.70']],
    ] as const) {
      const signup = await fetch(`${svc}/api/auth/signup`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: `bench-obs-${label}-${now}@example.com`, password: 'correct horse battery', date_of_birth: '1990-01-01' }),
      });
      const cookie = (signup.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
      const created = await fetch(`${svc}/api/api-keys`, { method: 'POST', headers: { 'content-type': 'application/json', cookie }, body: JSON.stringify({ name: 'bench observations' }) });
      const key = ((await created.json()) as { api_key: { key: string } }).api_key.key;
      const observations = amounts.map((amount, i) => ({ product_type: 'coffee', currency: 'USD', amount, observed_at: new Date(now - (i + 1) * 3_600_000).toISOString(), source }));
      const res = await fetch(`${svc}/api/data/observations`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: JSON.stringify({ observations }) });
      if (res.status !== 201) throw new Error(`seeding observations failed: ${res.status} ${await res.text()}`);
    }
    const body = JSON.stringify({ context: { product_type: 'coffee', currency: 'USD', unit_cost: 1.2 }, proposed_price: '4.50' });
    scenarios.push({
      name: 'POST /api/public/price-router/verify (keyless demo budget, observations read, verdict, usage event written)',
      service: { url: `${svc}/api/public/price-router/verify`, method: 'POST', headers: { 'content-type': 'application/json' }, body, traced: true },
      bare: { url: `${ctx.bareUrl}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body },
      sequential: true,
    });
    // The same observations price a context that carries nothing but its product type.
    const computeKey = keyFor.compute;
    if (computeKey) {
      const networkBody = JSON.stringify({ context: { product_type: 'coffee', currency: 'USD' }, function_id: 'fn_builtin_competitive' });
      scenarios.push({
        name: 'POST /api/compute/price (product_type only: competitive-position on the network\'s observations, usage event written, cache off)',
        service: { url: `${svc}/api/compute/price`, method: 'POST', headers: { 'x-api-key': computeKey, 'content-type': 'application/json' }, body: networkBody, traced: true },
        bare: { url: `${ctx.bareUrl}/bare`, method: 'POST', headers: { 'content-type': 'application/json' }, body: networkBody },
        sequential: true,
      });
    }
  }
  if (ctx.service.plugins.includes('catalog')) {
    scenarios.push({
      name: 'GET /api/public/leaderboard (public, ranking from the aggregate in memory)',
      service: { url: `${svc}/api/public/leaderboard`, method: 'GET' },
      bare: { url: `${ctx.bareUrl}/bare`, method: 'GET' },
      sequential: true,
    });
  }
  return scenarios;
}
