import { z } from 'zod';
import { listEnvelopeSchema } from '../../core/http/reply-fields';
import { sandboxLimitsSchema } from '../identity';

/**
 * Response schemas of the discovery documents and the changelog, for the OpenAPI document. The
 * documents name an address only when this instance serves it, so most of their parts are optional.
 */

const url = (what: string) => z.string().describe(what);

/** documents.ts `changelogObject`, in agents.json and mcp.json. */
const changelogPointer = z
  .object({
    json_feed: url('The changelog as JSON Feed 1.1 (GET /api/changelog/feed.json).'),
    rss: url('The changelog as RSS 2.0.'),
    page: url('The changelog as a web page.'),
    agent_filter: z.string().describe('How to keep only the entries for agents.'),
    check: z.string().describe('How often to look, and where else new agent entries show up (notices).'),
    newest_agent_entry: z.string().nullable().describe('The date of the newest published entry for agents (ISO 8601); null when there is none.'),
  })
  .meta({ id: 'ChangelogPointer', description: 'Where the changelog is, and how to follow it.' });

export const rootResponse = z.object({
  service: z.string().describe("The service's name."),
  description: z.string().describe('What it does, in a sentence.'),
  documents: z
    .object({
      llms_txt: url('A plain-text guide for language models.').optional(),
      agents_json: url('How agents get in (/.well-known/agents.json).').optional(),
      mcp_json: url('The MCP manifest; absent without the MCP endpoint.').optional(),
      openapi: url('The OpenAPI 3.1 description.').optional(),
    })
    .describe('Where the documents are; each is absent when this instance does not serve it.'),
  get_a_key: z
    .object({
      method: z.literal('POST').describe('The method.'),
      url: url('Self-registration: POST /api/agents/register.'),
      body: z.object({ name: z.string().describe('An example agent name.') }).describe('An example body.'),
      note: z.string().describe('What the call gives.'),
    })
    .optional()
    .describe('How to get a free sandbox key with no human involved; absent when self-registration is not served.'),
  try_without_a_key: z
    .object({
      method: z.literal('POST').describe('The method.'),
      url: url('The keyless demo: POST /api/public/compute/demo.'),
      body: z
        .object({ context: z.looseObject({}).describe('An example pricing context (open: a context takes any fields).') })
        .describe('An example body.'),
    })
    .optional()
    .describe('A priced call to try with no credential; absent when the keyless demo is not served.'),
  mcp: url('The MCP endpoint; absent without it.').optional(),
  health: url('The health check; absent when not served.').optional(),
});

const way = <I extends string, S extends z.ZodRawShape>(id: I, what: string, shape: S) =>
  z.object({ id: z.literal(id).describe('Which way in.'), how: z.string().describe('How it works, in a sentence.'), ...shape }).describe(what);

const wayIn = z.discriminatedUnion('id', [
  way('keyless_demo', 'No credential: the demo tenant, rate limited per caller address.', {
    endpoints: z.array(z.string()).describe('The keyless calls this instance serves, each "METHOD URL" (the demos, and the MCP endpoint called without a key).'),
    demo_calls_per_hour: z.number().int().describe('Keyless demo calls allowed per hour per caller address.'),
  }),
  way('self_registration', 'One unauthenticated call gives a sandbox key.', {
    endpoint: z.string().describe('The request to make (method and address).'),
    body: z.object({ name: z.string().describe('An example agent name.') }).describe('An example body.'),
  }),
  way('oauth_client_credentials', 'OAuth client registration, then the client_credentials grant.', {
    registration: z.string().describe('Dynamic client registration (method and address).'),
    registration_open: z.boolean().describe('Whether client registration is open now (closed: 503 self_registration_closed, while clients registered before still get tokens).'),
    token: z.string().describe('The token endpoint (method and address).'),
    metadata: z.string().describe('The authorization server metadata (RFC 8414).'),
    protected_resource: z.string().describe('The protected resource metadata (RFC 9728), where MCP clients find the authorization server.'),
  }),
  way('pay_per_call', 'x402 payment on a compute request without a credential.', { enabled: z.boolean().describe('Whether it is on (not yet).') }),
  way('agent_owned_workspace', 'Sign-in with an agent identity provider.', { enabled: z.boolean().describe('Whether it is on (not yet).') }),
  way('person_account', 'A person signs up and creates keys.', {
    signup: z.string().describe('Sign-up by email (method and address).'),
    wallet: z.string().optional().describe('Wallet sign-in, where it starts (method and address); absent when not served.'),
  }),
]);

export const agentsDocumentResponse = z.object({
  name: z.string().describe("The service's name."),
  description: z.string().describe('What it does.'),
  base_url: z.string().describe('The address every path is under.'),
  ways_in: z.array(wayIn).describe('The ways an agent gets in, each by id; a way whose routes this instance does not serve is left out.'),
  self_registration: z
    .object({
      endpoint: z.string().describe('Where to register.'),
      method: z.literal('POST').describe('The method.'),
      body: z.object({ name: z.string().describe('What to send as name.') }).describe('The body.'),
      open: z.boolean().describe('Whether registration is open now (closed: 503 self_registration_closed).'),
      limits: z
        .object({
          per_address_per_day: z.number().int().describe('Registrations per network address per day.'),
          overall_per_day: z.number().int().describe('Registrations per day overall.'),
          sandbox: sandboxLimitsSchema,
        })
        .describe('The limits in force.'),
    })
    .optional()
    .describe('Self-registration, with the limits in force; absent when not served.'),
  authentication: z
    .object({
      api_key_header: z.string().describe('The header an API key goes in.'),
      bearer: z.string().describe('What Authorization: Bearer accepts.'),
      scopes: z.array(z.string()).describe('The named scopes a key may be given.'),
      token_endpoint: z
        .string()
        .optional()
        .describe('Where client credentials (or an agent key) are exchanged for an access token, as "POST URL"; listed while client registration is paused too, since clients registered before still get tokens. Absent when not served.'),
    })
    .describe('How to send a credential.'),
  mcp: z
    .object({
      endpoint: z.string().describe('The MCP endpoint.'),
      transport: z.literal('streamable-http').describe('Its transport.'),
      protocol_version: z.string().describe('The MCP revision it speaks.'),
      manifest: z.string().describe('The MCP manifest (/.well-known/mcp.json).'),
      tools: z.array(z.string()).describe('The names of its tools.'),
    })
    .optional()
    .describe('The MCP endpoint; absent without it.'),
  openapi: z.string().describe('The OpenAPI description.'),
  llms_txt: z.string().describe('The plain-text guide for language models.'),
  changelog: changelogPointer,
});

const tool = z.object({
  name: z.string().describe("The tool's name, as tools/call takes it."),
  title: z.string().describe('A human-readable title.'),
  description: z.string().describe('What it does.'),
  inputSchema: z.looseObject({}).describe('The JSON Schema of its arguments (open: a JSON Schema document).'),
  outputSchema: z.looseObject({}).optional().describe('The JSON Schema of its structured result (open: a JSON Schema document); absent when it has none.'),
  requiresKey: z.boolean().describe('Whether it needs a credential (false: it works keyless; one that prices runs on the demo tenant).'),
  annotations: z
    .object({ readOnlyHint: z.boolean().describe('true when it only reads (false: it prices and records a usage event).'), openWorldHint: z.boolean().describe('Whether it reaches beyond this service (always false).') })
    .describe('The MCP tool annotations tools/list gives.'),
});

export const mcpDocumentResponse = z.object({
  name: z.string().describe("The server's name."),
  endpoint: z.string().describe('The MCP endpoint.'),
  transport: z.literal('streamable-http').describe('Its transport.'),
  transports: z.array(z.string()).describe('Every transport value it answers to (also the older http+jsonrpc).'),
  protocol_version: z.string().describe('The MCP revision it speaks.'),
  sessions: z.literal('stateless').describe('Sessions are optional: a request without a session id works.'),
  session_rules: z
    .object({
      header: z.string().describe('The header carrying the session id.'),
      issued_on: z.string().describe('The method that issues one.'),
      required: z.boolean().describe('Whether a session id must be sent (false).'),
      valid_hours: z.number().describe('Hours a session id stays valid.'),
      on_altered_expired_or_foreign_id: z.string().describe('What a bad session id gets, and what to do.'),
    })
    .describe('How sessions work.'),
  authentication: z
    .object({
      optional: z.boolean().describe('Whether a credential may be left out (true).'),
      headers: z.array(z.string()).describe('Where a credential may go.'),
      without_key: z.string().describe('What works without one: the methods, the tools declaring requiresKey false, and which of them run on the demo tenant.'),
      oauth: z
        .string()
        .optional()
        .describe('For an OAuth client (client credentials): get a token before the first call and send it as Authorization: Bearer, since keyless calls are served as the demo and never answered 401. Absent when the token endpoint is not served.'),
    })
    .describe('How to send a credential.'),
  limits: z
    .object({
      tool_call_timeout_ms: z.number().int().describe('Milliseconds a tool call may take.'),
      demo_calls_per_hour: z.number().int().describe('Keyless demo calls per hour per caller address.'),
    })
    .describe('The limits in force.'),
  tools: z.array(tool).describe('The tools, with their schemas.'),
  changelog: changelogPointer,
});

const changelogEntry = z
  .object({
    id: z.string().describe("The entry's id."),
    date: z.string().describe('When it was published (ISO 8601).'),
    title: z.string().describe('Its title.'),
    summary: z.string().describe('What changed, in a sentence or two.'),
    link: z.string().describe('Where it is described (an absolute address).'),
    audience: z.array(z.enum(['agents', 'people'])).describe('Who it is for.'),
  })
  .meta({ id: 'ChangelogEntry', description: 'A changelog entry.' });

// Not paged: every published entry is in `data`, so `limit` is their count.
export const changelogListResponse = listEnvelopeSchema(changelogEntry, 'The published entries, newest first (?audience= keeps one audience\'s).').extend({
  limit: z.number().int().describe('The number of entries in data (the list is not paged).'),
});

/** JSON Feed 1.1 (https://jsonfeed.org/version/1.1): the field names are the standard's. */
export const jsonFeedResponse = z.object({
  version: z.literal('https://jsonfeed.org/version/1.1').describe('The JSON Feed version.'),
  title: z.string().describe("The feed's title."),
  home_page_url: z.string().describe('The changelog page.'),
  feed_url: z.string().describe("This feed's address."),
  description: z.string().describe('What the feed holds.'),
  language: z.string().describe('Its language (en).'),
  items: z
    .array(
      z.object({
        id: z.string().describe("The entry's id."),
        url: z.string().describe('Where it is described.'),
        title: z.string().describe('Its title.'),
        summary: z.string().describe('What changed.'),
        content_text: z.string().describe('The same text as summary.'),
        date_published: z.string().describe('When it was published (ISO 8601).'),
        _service: z.object({ audience: z.array(z.enum(['agents', 'people'])).describe('Who it is for.') }).describe("This service's extension: the entry's audience."),
      }),
    )
    .describe('The published entries, newest first (?audience= keeps one audience\'s).'),
});
