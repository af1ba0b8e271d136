import type { Config } from '../../config';
import type { RegisteredRoute } from '../../core/http/pipeline';
import type { HttpMethod } from '../../core/http/route';
import { NAMED_SCOPES, claimOffered, registrationLimits, sandboxLimits } from '../identity';
import type { Changelog } from './services/changelog';
import { errorGuideLines } from './error-guide';

/** An MCP tool as the discovery documents describe it (registered by the mcp plugin). */
export interface ToolDescriptor {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  requiresKey: boolean;
  /** MCP tool annotations, as tools/list gives them: whether it only reads, and whether it reaches beyond this service. */
  annotations: { readOnlyHint: boolean; openWorldHint: boolean };
}

export const MCP_PATH = '/api/mcp/rpc';
export const MCP_PROTOCOL_VERSION = '2025-11-25';

/**
 * What this instance serves, read from the route table once every plugin has registered: the
 * documents name an address only when a route answers there, so a disabled plugin leaves no trace.
 */
export interface Surface {
  serves(method: HttpMethod, path: string): boolean;
  /** Served and open now (paused self-registration is served and closed): what a link offering a step may name. */
  offers(method: HttpMethod, path: string): boolean;
  /** Whether the MCP endpoint is registered. */
  mcp: boolean;
  /** The MCP tools registered (none without the endpoint). */
  tools: readonly ToolDescriptor[];
}

export function surfaceOf(routes: readonly RegisteredRoute[], tools: readonly ToolDescriptor[]): Surface {
  const served = new Map(routes.map(({ spec }) => [`${spec.method} ${spec.path}`, spec]));
  const serves = (method: HttpMethod, path: string): boolean => served.has(`${method} ${path}`);
  const offers = (method: HttpMethod, path: string): boolean => {
    const spec = served.get(`${method} ${path}`);
    return spec !== undefined && !spec.closed?.();
  };
  const mcp = serves('post', MCP_PATH);
  return { serves, offers, mcp, tools: mcp ? tools : [] };
}

/** `[value]` when `cond` holds, else nothing: for entries spread into a list. */
const when = <T>(cond: boolean, value: T): T[] => (cond ? [value] : []);

/**
 * What this instance does, in the words of each document: prices and verdicts only where their routes are served (the
 * pricing and verification plugins are an operator's to turn off), so no document promises what the instance refuses.
 */
export function offerSummary(s: Surface): { prices: boolean; verdicts: boolean } {
  return {
    prices: s.serves('post', '/api/compute/price') || s.serves('post', '/api/public/compute/demo'),
    verdicts: s.serves('post', '/api/price-router/verify') || s.serves('post', '/api/public/price-router/verify'),
  };
}

/** offerSummary as one sentence per clause: `price` and `verdict` name each clause, `neither` what is said without them. */
function offerText(s: Surface, price: string, verdict: string, neither: string): string {
  const { prices, verdicts } = offerSummary(s);
  const clauses = [...when(prices, price), ...when(verdicts, verdict)];
  return clauses.length ? `${clauses.join('; ')}.` : neither;
}

const NEITHER = 'This instance serves neither prices nor verdicts (its operator turned them off); its OpenAPI document lists what it serves.';

export function changelogObject(base: string, changelog: Changelog): Record<string, unknown> {
  return {
    json_feed: `${base}/api/changelog/feed.json`,
    rss: `${base}/api/changelog/rss.xml`,
    page: `${base}/changelog`,
    agent_filter: 'items[]._service.audience includes "agents" (or request the feed with ?audience=agents)',
    check: 'daily; notices on API responses also carry new agent entries once per key (compute, batch, price-router, /api/me and /api/functions requests made with an API key; tokens, sessions and keyless calls get none)',
    newest_agent_entry: changelogNewest(changelog),
  };
}

function changelogNewest(changelog: Changelog): string | null {
  return changelog.newestAgentEntryDate();
}

export function sessionRules(config: Config): Record<string, unknown> {
  return {
    header: 'Mcp-Session-Id',
    issued_on: 'initialize',
    required: false,
    valid_hours: config.limits.mcp.sessionTtlHours,
    on_altered_expired_or_foreign_id: '404: send initialize again (or continue without a session id)',
  };
}

export function agentsDocument(config: Config, base: string, changelog: Changelog, s: Surface): Record<string, unknown> {
  const keyless = [
    ...when(s.serves('post', '/api/public/compute/demo'), `POST ${base}/api/public/compute/demo`),
    ...when(s.serves('post', '/api/public/price-router/verify'), `POST ${base}/api/public/price-router/verify`),
    // "METHOD URL" as the others: MCP is POSTed JSON-RPC, and under keyless_demo it is MCP without a key.
    ...when(s.mcp, `POST ${base}${MCP_PATH}`),
  ];
  const registration = s.serves('post', '/api/agents/register');
  const oauth = s.serves('post', '/api/oauth/register') && s.serves('post', '/api/oauth/token') && s.serves('get', '/.well-known/oauth-authorization-server');
  // Paused (SELF_REGISTRATION_OPEN=false), both registrations answer 503: self-registration is not offered as a way in
  // meanwhile (self_registration.open says so), while OAuth stays one, marked paused: clients registered before still get tokens.
  const registering = config.identity.selfRegistrationOpen;
  const signup = s.serves('post', '/api/auth/signup');
  const wallet = s.serves('post', '/api/auth/wallet/nonce');
  return {
    name: 'Pricing Compute Service',
    description: offerText(s, 'Send a context, get a computed price', `${offerSummary(s).prices ? 's' : 'S'}end a proposed price, get a verdict (reasonable, high, low or unknown) with its evidence`, NEITHER),
    base_url: base,
    ways_in: [
      ...when(keyless.length > 0, { id: 'keyless_demo', how: 'No credential; demo tenant, rate limited per caller address.', endpoints: keyless, demo_calls_per_hour: config.limits.demo.callsPerHour }),
      ...when(registration && registering, { id: 'self_registration', how: claimOffered(config) ? 'One unauthenticated call gives a free sandbox key; a person can claim the workspace later.' : 'One unauthenticated call gives a free sandbox key; it keeps the sandbox limits (this service has no sign-in, so nobody claims it here).', endpoint: `POST ${base}/api/agents/register`, body: { name: 'my-pricing-agent' } }),
      ...when(oauth, {
        id: 'oauth_client_credentials',
        how: `Register a client, then exchange its credentials for an access token. No authorization-code flow.${registering ? '' : ' Client registration is currently paused (503 self_registration_closed); clients registered before still get tokens.'}`,
        registration: `POST ${base}/api/oauth/register`,
        registration_open: registering,
        token: `POST ${base}/api/oauth/token`,
        metadata: `${base}/.well-known/oauth-authorization-server`,
        protected_resource: `${base}/.well-known/oauth-protected-resource`,
      }),
      { id: 'pay_per_call', how: 'Where enabled, a compute request without a credential answers 402 with x402 payment requirements (USDC).', enabled: false },
      { id: 'agent_owned_workspace', how: 'Interactive sign-in with an agent identity provider, authorised with an inbox the agent controls; then a key from Settings.', enabled: false },
      ...when(signup, { id: 'person_account', how: `A person signs up (email${wallet ? ' or wallet' : ''}) and creates keys or agent-bound keys.`, signup: `POST ${base}/api/auth/signup`, ...(wallet ? { wallet: `POST ${base}/api/auth/wallet/nonce` } : {}) }),
    ],
    ...(registration
      ? {
          self_registration: {
            endpoint: `${base}/api/agents/register`,
            method: 'POST',
            // A body that works as sent; the name is a label of the agent's system and role (e.g. "pricing-agent/checkout").
            body: { name: 'my-pricing-agent' },
            open: config.identity.selfRegistrationOpen,
            limits: { ...registrationLimits(config), sandbox: sandboxLimits(config) },
          },
        }
      : {}),
    authentication: {
      api_key_header: 'x-api-key',
      bearer: 'Authorization: Bearer <access token, person token or API key>',
      scopes: [...NAMED_SCOPES],
      // Not only under ways_in: registered clients keep exchanging their credentials while registration is paused.
      ...(s.serves('post', '/api/oauth/token') ? { token_endpoint: `POST ${base}/api/oauth/token` } : {}),
    },
    ...(s.mcp ? { mcp: { endpoint: `${base}${MCP_PATH}`, transport: 'streamable-http', protocol_version: MCP_PROTOCOL_VERSION, manifest: `${base}/.well-known/mcp.json`, tools: s.tools.map((t) => t.name) } } : {}),
    openapi: `${base}/api/openapi.json`,
    llms_txt: `${base}/llms.txt`,
    changelog: changelogObject(base, changelog),
  };
}

/**
 * Clients that ask for an OAuth token only when refused 401 (the MCP SDK's authProvider) never are here: keyless calls
 * are served as the demo. Said where such a client's author looks, since its calls would otherwise run keyless unnoticed.
 */
const KEYLESS_MCP_OAUTH =
  'Keyless calls are served (as the demo), so this endpoint never answers 401 to make a client ask for a token: an OAuth client (client credentials, POST /api/oauth/token) gets its token before its first call and sends it as Authorization: Bearer (with the MCP SDK: await auth(provider, { serverUrl }) before connecting). A result with demo: true was served without a credential.';

/**
 * What answers without a credential, read from the tools' own declarations so it cannot drift from them: the tools
 * declaring `requiresKey: false`, and of those the ones that price and record (not read-only), served as the demo.
 */
function withoutKey(tools: readonly ToolDescriptor[]): string {
  const keyless = tools.filter((t) => !t.requiresKey).map((t) => t.name);
  const demo = tools.filter((t) => !t.requiresKey && !t.annotations.readOnlyHint).map((t) => t.name);
  return [
    `initialize, tools/list, ping${keyless.length ? ` and the tools ${keyless.join(', ')}` : ''}`,
    ...(demo.length ? [`${demo.join(' and ')} on the demo tenant, within the hourly demo budget per address (their results carry demo: true)`] : []),
  ].join('; ');
}

/** The MCP manifest; only for a surface with the MCP endpoint (the route answers 404 otherwise). */
export function mcpDocument(config: Config, base: string, changelog: Changelog, s: Surface): Record<string, unknown> {
  return {
    name: 'pricing-compute',
    endpoint: `${base}${MCP_PATH}`,
    transport: 'streamable-http',
    transports: ['streamable-http', 'http+jsonrpc'],
    protocol_version: MCP_PROTOCOL_VERSION,
    sessions: 'stateless',
    session_rules: sessionRules(config),
    authentication: {
      optional: true,
      headers: ['x-api-key', 'Authorization: Bearer'],
      without_key: withoutKey(s.tools),
      ...(s.serves('post', '/api/oauth/token') ? { oauth: KEYLESS_MCP_OAUTH } : {}),
    },
    limits: { tool_call_timeout_ms: config.limits.mcp.toolTimeoutMs, demo_calls_per_hour: config.limits.demo.callsPerHour },
    tools: s.tools,
    changelog: changelogObject(base, changelog),
  };
}

export function llmsText(config: Config, base: string, changelog: Changelog, s: Surface): string {
  const l = config.limits;
  const reg = registrationLimits(config);
  const section = (title: string, lines: readonly string[]): string => (lines.length ? `## ${title}\n\n${lines.join('\n')}\n\n` : '');
  const registration = s.serves('post', '/api/agents/register');
  const compute = s.serves('post', '/api/compute/price');
  const observations = s.serves('post', '/api/data/observations');
  const tools = s.tools.map((t) => t.name).join(', ');
  const verifies = s.serves('post', '/api/price-router/verify');
  const contributes = s.serves('post', '/api/data/observations');
  const claimable = claimOffered(config);
  const start = [
    ...when(s.serves('post', '/api/public/compute/demo'), `- Keyless demo: POST ${base}/api/public/compute/demo with {"context": {"product_type": "coffee", "current_price": 4.5, "currency": "USD"}} (${l.demo.callsPerHour} calls per hour per address).`),
    ...when(
      registration,
      `- Free sandbox key: POST ${base}/api/agents/register with {"name": "my-pricing-agent"}${config.identity.selfRegistrationOpen ? '' : ' (currently paused: 503 self_registration_closed)'}. Registration limits in force: ${reg.per_address_per_day} per day per network address, ${reg.overall_per_day} per day overall.`,
    ),
    ...when(
      registration,
      `- Sandbox (Agent Starter) limits: ${l.sandbox.computeCallsPerDay} compute calls per day${verifies ? ' (price verifications count as calls)' : ''}, key valid ${l.sandbox.keyLifetimeDays} days unless claimed, ${l.sandbox.keyRotationsPerDay} key rotations per day, built-in functions only, no batch pricing; ${
        claimable
          ? `the usage API (your receipts' links)${contributes ? ', data contributions' : ''} and test runs open once a person claims the sandbox, and until then every priced answer (a 200) carries its own usage record (receipt) and the calls left (remaining); a refused or failed call is not counted against the calls. Give the person the claim link from your registration; lost it? POST ${base}/api/agents/claim-link with your key answers a new one.`
          : `no usage API${contributes ? ', data contributions' : ''} or test runs, and every priced answer (a 200) carries its own usage record (receipt) and the calls left (remaining); a refused or failed call is not counted against the calls. This service has no sign-in, so no person can claim a sandbox here: the limits stay.`
      }`,
    ),
    ...when(s.serves('post', '/api/oauth/register') && s.serves('post', '/api/oauth/token'), `- OAuth client credentials: POST ${base}/api/oauth/register${config.identity.selfRegistrationOpen ? '' : ' (currently paused: 503 self_registration_closed; existing clients still get tokens)'}, then POST ${base}/api/oauth/token (grant_type=client_credentials).`),
  ];
  const price = [
    ...when(compute, `- POST ${base}/api/compute/price with x-api-key: {"context": {...}, "function_id"?: "...", "routing_preference"?: "cheapest|fastest|round_robin|weighted|explicit"}.`),
    ...when(compute, `- A context needs one thing to price from: unit_cost, current_price, target_price (charm-pricing rounds it to a price ending), competitor_prices, or a product_type the network holds price observations of${observations ? ` (contribute them with POST ${base}/api/data/observations)` : ''}.`),
    ...when(s.serves('post', '/api/compute/batch'), `- POST ${base}/api/compute/batch: up to ${l.batchMaxItems} items (claimed workspaces).`),
    ...when(s.serves('post', '/api/price-router'), `- POST ${base}/api/price-router: as compute, plus function_name.`),
    ...when(s.serves('post', '/api/public/price-router/verify'), `- POST ${base}/api/public/price-router/verify (keyless; with a key: POST ${base}/api/price-router/verify): {"context": {"product_type": "coffee", "currency": "USD", "unit_cost": 1.2}, "proposed_price": "4.50"} answers a verdict on the proposed price (price is accepted as its alias).`),
    ...when(s.serves('get', '/api/functions'), `- GET ${base}/api/functions: the functions you can use.`),
  ];
  const agents = [
    ...when(
      s.mcp,
      `- MCP (Streamable HTTP ${MCP_PROTOCOL_VERSION}): ${base}${MCP_PATH}${tools ? `; tools: ${tools}` : ''}. Session id optional; sessions last ${l.mcp.sessionTtlHours} hours; tool calls time out after ${l.mcp.toolTimeoutMs} ms.${
        s.serves('post', '/api/oauth/token') ? ` ${KEYLESS_MCP_OAUTH}` : ''
      }`,
    ),
    `- Discovery: ${base}/.well-known/agents.json${s.mcp ? `, ${base}/.well-known/mcp.json` : ''}.`,
    `- OpenAPI: ${base}/api/openapi.json (YAML; JSON with ?format=json).`,
    `- Changelog: ${base}/api/changelog/feed.json (JSON Feed; agent entries have _service.audience including "agents"), ${base}/api/changelog/rss.xml. Newest agent entry: ${changelog.newestAgentEntryDate() ?? 'none yet'}.`,
  ];
  return `# Pricing Compute Service

> A network service that computes prices. ${offerText(s, 'Send a context and get a computed price', `${offerSummary(s).prices ? 's' : 'S'}end a proposed price with its context and get a verdict (reasonable, high, low or unknown) with evidence`, NEITHER)}

${section('Start without a human', start)}${section('Price', price)}${section('For agents', agents)}## Errors

Every error has error, code and message, and often hint, next, example, issues, retry_after and limit${s.mcp ? " (the MCP endpoint's own transport refusals, 400 for a protocol version, a session id or a body that is not one JSON-RPC message, 403 for a foreign origin, 404 for a session, 405, 406, and 413 and 415 for a body it will not read, are JSON-RPC errors instead: error is {code, message}, with jsonrpc, and code and hint beside it; what any route answers about the credential or the request rate before the message is read has the common shape there too: 401, 400 bad_request for an empty x-workspace-id, 404 not_found for an x-workspace-id the credential may not act in, 403 forbidden for a session cookie from another site's page, 429 and 503)" : ''}. 401s list where to get a credential; 429s carry Retry-After.
${
    compute
      ? "Retry, after Retry-After, on retryable: true: 503 service_busy (every pricing worker was busy), 503 service_unavailable (the call could not be recorded, or the database or the key-value store did not answer), 502 functions_failed (every function tried failed; retryable: false when each failed only at an address the service will not call, so a retry cannot help). None of them is charged. Creating an API key, a function or a routing policy? Send Idempotency-Key (a UUID) and retry with the same one: a repeat answers what the first created (Idempotent-Replayed: true). Priced calls (compute, price router, batch) and price verification take it too: a retry with the same key and body answers the first result, charged and counted once; a key stands for one request (another body, or a batch's key on a single call and the reverse, is 422 idempotency_key_reused). 422 insufficient_context is not retryable as is: it names what the context lacks, which amount is out of range, or which value (a currency) an endpoint would not price as sent."
      : 'Retry, after Retry-After, on retryable: true: 503 service_unavailable (the database or the key-value store did not answer). Creating an API key? Send Idempotency-Key (a UUID) and retry with the same one: a repeat answers what the first created (Idempotent-Replayed: true).'
  }

Each code, by status:
${errorGuideLines({ payments: s.serves('post', '/api/payments/day-pass'), mcp: s.mcp, serves: (method, path) => s.serves(method, path) }).join('\n')}
`;
}
