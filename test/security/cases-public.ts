import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { client } from '../support/http';
import type { CredentialKind, SecurityCase } from '../support/security';
import type { TestService } from '../support/service';
import { registerSandbox } from '../support/world';

/** A route's valid request for the input fuzz; without `as` it is sent with no credential. */
export type FuzzCase = Omit<SecurityCase, 'as'> & { as?: CredentialKind };

let n = 0;
const unique = (label: string) => `${label}-${Date.now()}-${n++}`;

async function signedWalletMessage(svc: TestService): Promise<{ message: string; signature: string }> {
  const account = privateKeyToAccount(generatePrivateKey());
  const res = await client(svc.url).post<{ message: string }>('/api/auth/wallet/nonce', { address: account.address });
  return { message: res.body.message, signature: await account.signMessage({ message: res.body.message }) };
}

/**
 * Valid requests of the public routes that take a body, a query or a path parameter, for the input
 * fuzz (the authenticated routes' come from securityCases), and a richer one for a route whose
 * security request is minimal (MCP: a tool call reaches the tools' argument validation).
 */
export const publicFuzzCases: Record<string, FuzzCase> = {
  'agents.register': { request: () => ({ path: '/api/agents/register', body: { name: 'fuzzed-agent' } }) },
  'agents.claimLink.read': { request: async (_w, svc) => ({ path: `/api/agents/claim/${(await registerSandbox(svc, 'fuzz-claim')).claimToken}` }) },
  'oauth.register': { request: () => ({ path: '/api/oauth/register', body: { client_name: 'fuzz client', grant_types: ['client_credentials'] } }) },
  'oauth.token': { as: 'sandboxKey', request: () => ({ path: '/api/oauth/token', body: { grant_type: 'client_credentials' } }) },
  'auth.signup': { request: () => ({ path: '/api/auth/signup', body: { email: `${unique('fuzz')}@example.com`, password: 'correct horse battery', date_of_birth: '1990-01-01', display_name: 'Fuzz' } }) },
  'auth.signin': { request: (w) => ({ path: '/api/auth/signin', body: { email: w.b.owner.email, password: 'correct horse battery' } }) },
  'auth.wallet.nonce': { request: () => ({ path: '/api/auth/wallet/nonce', body: { address: privateKeyToAccount(generatePrivateKey()).address, chain_id: 1 } }) },
  'auth.wallet.signin': { request: async (_w, svc) => ({ path: '/api/auth/wallet/signin', body: { ...(await signedWalletMessage(svc)), date_of_birth: '1990-12-10' } }) },
  'demo.compute': { request: () => ({ path: '/api/public/compute/demo', body: { context: { current_price: 10, currency: 'USD' } } }) },
  'demo.verify': { request: () => ({ path: '/api/public/price-router/verify', body: { context: { product_type: 'coffee', currency: 'USD', unit_cost: 1.2 }, proposed_price: '4.50' } }) },
  'pipelines.runPublic': { request: () => ({ path: '/api/public/pipelines/pl_cost_to_shelf/run', body: {} }), okStatuses: [501] },
  'discovery.openapi': { request: () => ({ path: '/api/openapi.json' }) },
  'changelog.list': { request: () => ({ path: '/api/changelog?audience=agents' }) },
  'changelog.jsonFeed': { request: () => ({ path: '/api/changelog/feed.json' }) },
  'changelog.rss': { request: () => ({ path: '/api/changelog/rss.xml' }) },
  'changelog.page': { request: () => ({ path: '/changelog?audience=people' }) },
  'leaderboard.read': { request: () => ({ path: '/api/public/leaderboard' }) },
  'mcp.post': {
    as: 'key',
    request: () => ({ path: '/api/mcp/rpc', body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'compute_price', arguments: { context: { current_price: 10, currency: 'USD' }, routing_preference: 'cheapest' } } } }),
  },
};
