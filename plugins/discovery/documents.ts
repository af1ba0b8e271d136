import type { Config } from '../../config';
import { registrationLimits, sandboxLimits } from '../identity';
import type { Changelog } from './services/changelog';

/** An MCP tool as the discovery documents describe it (registered by the mcp plugin). */
export interface ToolDescriptor {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
  requiresKey: boolean;
}

export const MCP_PATH = '/api/mcp/rpc';
export const MCP_PROTOCOL_VERSION = '2025-11-25';

export function changelogObject(base: string, changelog: Changelog): Record<string, unknown> {
  return {
    json_feed: `${base}/api/changelog/feed.json`,
    rss: `${base}/api/changelog/rss.xml`,
    page: `${base}/changelog`,
    agent_filter: 'items[]._service.audience includes "agents" (or request the feed with ?audience=agents)',
    check: 'daily; notices on API responses also carry new agent entries once per key',
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

export function agentsDocument(config: Config, base: string, changelog: Changelog, tools: readonly ToolDescriptor[]): Record<string, unknown> {
  return {
    name: 'Pricing Compute Service',
    description: 'Send a context, get a computed price; send a proposed price, get a verdict (reasonable, high, low or unknown) with its evidence.',
    base_url: base,
    ways_in: [
      { id: 'keyless_demo', how: 'No credential; demo tenant, rate limited per caller address.', endpoints: [`POST ${base}/api/public/compute/demo`, `POST ${base}/api/public/price-router/verify`, `${base}${MCP_PATH} without a key`], demo_calls_per_hour: config.limits.demo.callsPerHour },
      { id: 'self_registration', how: 'One unauthenticated call gives a free sandbox key; a person can claim the workspace later.', endpoint: `POST ${base}/api/agents/register`, body: { name: 'my-pricing-agent' } },
      { id: 'oauth_client_credentials', how: 'Register a client, then exchange its credentials for an access token. No authorization-code flow.', registration: `POST ${base}/api/oauth/register`, token: `POST ${base}/api/oauth/token`, metadata: `${base}/.well-known/oauth-authorization-server` },
      { id: 'pay_per_call', how: 'Where enabled, a compute request without a credential answers 402 with x402 payment requirements (USDC).', enabled: false },
      { id: 'agent_owned_workspace', how: 'Interactive sign-in with an agent identity provider, authorised with an inbox the agent controls; then a key from Settings.', enabled: false },
      { id: 'person_account', how: 'A person signs up (email or wallet) and creates keys or agent-bound keys.', signup: `POST ${base}/api/auth/signup`, wallet: `POST ${base}/api/auth/wallet/nonce` },
    ],
    self_registration: {
      endpoint: `${base}/api/agents/register`,
      method: 'POST',
      body: { name: 'a system/role style label' },
      open: config.identity.selfRegistrationOpen,
      limits: { ...registrationLimits(config), sandbox: sandboxLimits(config) },
    },
    authentication: {
      api_key_header: 'x-api-key',
      bearer: 'Authorization: Bearer <access token> (also accepted by the MCP endpoint for API keys)',
      scopes: ['price:compute', 'workspace:claim', 'team:admin', 'billing:read', 'billing:write', 'commerce:configure', 'commerce:proposal:approve', 'commerce:execute'],
    },
    mcp: { endpoint: `${base}${MCP_PATH}`, transport: 'streamable-http', protocol_version: MCP_PROTOCOL_VERSION, manifest: `${base}/.well-known/mcp.json`, tools: tools.map((t) => t.name) },
    openapi: `${base}/api/openapi.json`,
    llms_txt: `${base}/llms.txt`,
    changelog: changelogObject(base, changelog),
  };
}

export function mcpDocument(config: Config, base: string, changelog: Changelog, tools: readonly ToolDescriptor[]): Record<string, unknown> {
  return {
    name: 'pricing-compute',
    endpoint: `${base}${MCP_PATH}`,
    transport: 'streamable-http',
    transports: ['streamable-http', 'http+jsonrpc'],
    protocol_version: MCP_PROTOCOL_VERSION,
    sessions: 'stateless',
    session_rules: sessionRules(config),
    authentication: { optional: true, headers: ['x-api-key', 'Authorization: Bearer'], without_key: 'initialize, tools/list, demo pricing and verification on the demo tenant' },
    limits: { tool_call_timeout_ms: config.limits.mcp.toolTimeoutMs, demo_calls_per_hour: config.limits.demo.callsPerHour },
    tools,
    changelog: changelogObject(base, changelog),
  };
}

export function llmsText(config: Config, base: string, changelog: Changelog, tools: readonly ToolDescriptor[]): string {
  const l = config.limits;
  const reg = registrationLimits(config);
  return `# Pricing Compute Service

> A network service that computes prices. Send a context and get a computed price; send a proposed price with its context and get a verdict (reasonable, high, low or unknown) with evidence.

## Start without a human

- Keyless demo: POST ${base}/api/public/compute/demo with {"context": {"product_type": "coffee", "current_price": 4.5, "currency": "USD"}} (${l.demo.callsPerHour} calls per hour per address).
- Free sandbox key: POST ${base}/api/agents/register with {"name": "my-pricing-agent"}${config.identity.selfRegistrationOpen ? '' : ' (currently paused: 503 self_registration_closed)'}. Registration limits in force: ${reg.per_address_per_day} per day per network address, ${reg.overall_per_day} per day overall.
- Sandbox (Agent Starter) limits: ${l.sandbox.computeCallsPerDay} compute calls per day, key valid ${l.sandbox.keyLifetimeDays} days unless claimed, ${l.sandbox.keyRotationsPerDay} key rotations per day, built-in functions only, no batch pricing.
- OAuth client credentials: POST ${base}/api/oauth/register, then POST ${base}/api/oauth/token (grant_type=client_credentials).

## Price

- POST ${base}/api/compute/price with x-api-key: {"context": {...}, "function_id"?: "...", "routing_preference"?: "cheapest|fastest|round_robin|weighted|explicit"}.
- A context needs one thing to price from: unit_cost, current_price, competitor_prices, or a product_type the network holds price observations of (contribute them with POST ${base}/api/data/observations).
- POST ${base}/api/compute/batch: up to ${l.batchMaxItems} items (claimed workspaces).
- POST ${base}/api/price-router: as compute, plus function_name.
- POST ${base}/api/public/price-router/verify: {"context": {...}, "proposed_price": 4.2}.
- GET ${base}/api/functions: the functions you can use.

## For agents

- MCP (Streamable HTTP ${MCP_PROTOCOL_VERSION}): ${base}${MCP_PATH}; tools: ${tools.map((t) => t.name).join(', ') || 'compute_price, verify_price, list_functions, browse_catalog'}. Session id optional; sessions last ${l.mcp.sessionTtlHours} hours; tool calls time out after ${l.mcp.toolTimeoutMs} ms.
- Discovery: ${base}/.well-known/agents.json, ${base}/.well-known/mcp.json.
- OpenAPI: ${base}/api/openapi.json (YAML; JSON with ?format=json).
- Changelog: ${base}/api/changelog/feed.json (JSON Feed; agent entries have _service.audience including "agents"), ${base}/api/changelog/rss.xml. Newest agent entry: ${changelog.newestAgentEntryDate() ?? 'none yet'}.

## Errors

Every error has error, code and message, and often hint, next, example, issues, retry_after and limit. 401s list where to get a credential; 429s carry Retry-After.
Retry, after Retry-After, on retryable: true: 503 service_busy (every pricing worker was busy), 503 service_unavailable (the call could not be recorded), 502 functions_failed (every function tried failed). None of them is charged. 422 insufficient_context is not retryable as is: it names what the context lacks or which amount is out of range.
`;
}
