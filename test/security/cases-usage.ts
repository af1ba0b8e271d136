import { client } from '../support/http';
import type { SecurityCase } from '../support/security';
import type { TestService } from '../support/service';

/** A compute call made with `key`; returns the id of its usage event (the receipt). */
async function usageEvent(svc: TestService, key: string): Promise<string> {
  const res = await client(svc.url, { 'x-api-key': key }).post<Record<string, any>>('/api/compute/price', { context: { current_price: 10, currency: 'USD' } });
  if (res.status !== 200) throw new Error(`compute failed: ${res.status} ${res.text}`);
  return res.body.receipt.usage_event_id as string;
}

/** Security suites of the usage plugin's authenticated routes (spread into securityCases). */
export const usageSecurityCases: Record<string, SecurityCase> = {
  'usage.events.list': { as: 'key', request: (w) => ({ path: `/api/usage/events?classification=mine&limit=5&agent_id=${w.a.agentId}&key_id=${w.a.agentKeyId}` }) },
  'usage.events.read': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/usage/events/${await usageEvent(svc, w.a.key)}` }),
    cross: async (w, svc) => ({ path: `/api/usage/events/${await usageEvent(svc, w.b.key)}` }),
  },
  'usage.outcome': {
    as: 'key',
    request: async (w, svc) => ({ path: `/api/usage/events/${await usageEvent(svc, w.a.key)}/outcome`, body: { outcome: 'accepted', quality_score: 0.7 } }),
    cross: async (w, svc) => ({ path: `/api/usage/events/${await usageEvent(svc, w.b.key)}/outcome`, body: { outcome: 'rejected' } }),
  },
  'usage.summary': { as: 'key', request: () => ({ path: '/api/usage/summary' }) },
  'settings.testerTags.read': { as: 'person', request: () => ({ path: '/api/settings/tester-tags' }) },
  'settings.testerTags.replace': { as: 'key', request: () => ({ path: '/api/settings/tester-tags', body: { tags: [{ label: 'security suite', user_agent_contains: 'security-suite-agent' }] } }) },
};
