import type { Response } from 'express';
import { z } from 'zod';
import { stringify } from 'yaml';
import type { Config } from '../../../config';
import type { Clock } from '../../../core/clock';
import { ApiError } from '../../../core/errors';
import type { RouteTable } from '../../../core/http/pipeline';
import { sendBody, strongEtag } from '../../../core/http/send-body';
import { HANDLED, defineRoute, ok } from '../../../core/http/route';
import type { HandlerResult, Reply, RouteSpec } from '../../../core/http/route';
import { agentsDocument, llmsText, mcpDocument, offerSummary, surfaceOf } from '../documents';
import type { Surface, ToolDescriptor } from '../documents';
import { buildOpenApi } from '../openapi';
import * as r from '../responses';
import type { Changelog } from '../services/changelog';

export interface DocumentDeps {
  config: Config;
  routes: RouteTable;
  changelog: Changelog;
  publicUrl: () => string;
  tools: () => readonly ToolDescriptor[];
  version: string;
  clock: Clock;
}

/**
 * How long a built OpenAPI document is served: examples computed when read (observations' observed_at, hours before
 * now) must not age out of the verification window on a long-running instance, and the ~400 KB build is not repeated
 * per request. The document is rebuilt on the first request of each UTC hour.
 */
const OPENAPI_REBUILD_MS = 3_600_000;

const publicDoc = { auth: 'public' as const, rateLimit: 'none', tags: ['Discovery'], conditional: true as const };

/** A body built once and served many times, with its ETag computed once too. */
interface Rendered {
  body: string;
  etag: string;
}
const rendered = (body: string): Rendered => ({ body, etag: strongEtag(body) });

/**
 * The discovery documents are public and cached for a minute; each carries a strong ETag of its bytes, so a client
 * polling one (If-None-Match) gets 304 without the body until it changes.
 */
const CACHE_CONTROL = 'public, max-age=60';
const json = (body: Record<string, unknown>): Reply => ({ ...ok(body, { 'Cache-Control': CACHE_CONTROL }), etag: true });
function text(res: Response, body: string, type: string, etag: string | true = true): HandlerResult {
  res.setHeader('Cache-Control', CACHE_CONTROL);
  sendBody(res.status(200), body, type, { etag });
  return HANDLED;
}

export function documentRoutes(d: DocumentDeps): RouteSpec[] {
  let openapiCache: { period: number; json: Rendered; yaml: Rendered } | null = null;
  // Read on first request: plugins registering after this one (mcp) have added their routes by then.
  let surfaceCache: Surface | null = null;
  const surface = (): Surface => (surfaceCache ??= surfaceOf(d.routes.all(), d.tools()));
  const openapi = () => {
    const period = Math.floor(d.clock.now() / OPENAPI_REBUILD_MS);
    if (openapiCache?.period === period) return openapiCache;
    // The manifest route answers 404 without the MCP endpoint, so it is not offered then; nor is a person's way in
    // without anyone to sign in (the accounts plugin).
    const routes = d.routes.all().filter((r) => r.spec.id !== 'discovery.mcp' || surface().mcp);
    const doc = buildOpenApi(routes, { version: d.version, serverUrl: d.publicUrl(), people: surface().serves('post', '/api/auth/signin') });
    // compat: a string that YAML 1.1 (PyYAML, js-yaml's default) would read as something else — a date such as
    // 1990-12-10, yes/no, 0x1F — is quoted, as are those YAML 1.2 would, so every reader gets the JSON document's values.
    // The YAML is written from the JSON's values: an example read as it is serialized (observations' observed_at, a
    // getter of the clock) is read once, so both formats of one build say the same.
    const asJson = JSON.stringify(doc);
    openapiCache = { period, json: rendered(asJson), yaml: rendered(stringify(JSON.parse(asJson) as unknown, { aliasDuplicateObjects: false, compat: 'yaml-1.1' })) };
    return openapiCache;
  };
  return [
    defineRoute({
      id: 'discovery.openapi',
      method: 'get',
      path: '/api/openapi.json',
      summary: 'OpenAPI 3.1 description of this service: YAML by default, JSON with format=json or an Accept preferring application/json (q-values count).',
      ...publicDoc,
      query: z.object({ format: z.enum(['json', 'yaml']).optional() }),
      produces: ['application/yaml', 'application/json'],
      handler: (ctx): HandlerResult => {
        const doc = openapi();
        // Negotiated as Express does: the higher q wins (q=0 refuses a type), equal q goes by the Accept header's order,
        // and no Accept, a wildcard or an Accept naming neither gets YAML (never a 406: the format is also in the address).
        const asJson = ctx.query.format === 'json' || (ctx.query.format !== 'yaml' && ctx.req.accepts(['application/yaml', 'application/json']) === 'application/json');
        // Publicly cacheable: without Vary a shared cache would hand the first caller's format to everyone.
        if (ctx.query.format === undefined) ctx.res.vary('Accept');
        const { body, etag } = asJson ? doc.json : doc.yaml;
        return text(ctx.res, body, asJson ? 'application/json; charset=utf-8' : 'application/yaml; charset=utf-8', etag);
      },
    }),
    defineRoute({
      id: 'discovery.root',
      method: 'get',
      path: '/',
      summary: 'Where to start: the documents for agents and people, the OpenAPI description, and how to get a key.',
      ...publicDoc,
      responses: { 200: { description: 'Where to start.', schema: r.rootResponse } },
      handler: () => json(rootDocument(d.publicUrl(), surface())),
    }),
    defineRoute({
      id: 'discovery.agents',
      method: 'get',
      path: '/.well-known/agents.json',
      summary: 'How agents get in: ways in, self-registration with the limits in force, MCP, OpenAPI, changelog.',
      ...publicDoc,
      responses: { 200: { description: 'The agents document.', schema: r.agentsDocumentResponse } },
      handler: () => json(agentsDocument(d.config, d.publicUrl(), d.changelog, surface())),
    }),
    defineRoute({
      id: 'discovery.mcp',
      method: 'get',
      path: '/.well-known/mcp.json',
      summary: 'The MCP endpoint: transport, session rules, tools, changelog.',
      ...publicDoc,
      responses: { 200: { description: 'The MCP manifest (404 without the MCP endpoint).', schema: r.mcpDocumentResponse } },
      handler: () => {
        if (!surface().mcp) throw new ApiError('not_found', 'This service runs without an MCP endpoint.', { hint: 'agents.json at /.well-known/agents.json lists the ways in this service offers.' });
        return json(mcpDocument(d.config, d.publicUrl(), d.changelog, surface()));
      },
    }),
    defineRoute({
      id: 'discovery.llms',
      method: 'get',
      path: '/llms.txt',
      summary: 'A plain-text guide for language models, from the live configuration.',
      ...publicDoc,
      produces: ['text/plain'],
      handler: ({ res }) => text(res, llmsText(d.config, d.publicUrl(), d.changelog, surface()), 'text/plain; charset=utf-8'),
    }),
    defineRoute({
      id: 'discovery.llmsWellKnown',
      method: 'get',
      path: '/.well-known/llms.txt',
      summary: 'The same text as /llms.txt.',
      ...publicDoc,
      produces: ['text/plain'],
      handler: ({ res }) => text(res, llmsText(d.config, d.publicUrl(), d.changelog, surface()), 'text/plain; charset=utf-8'),
    }),
  ];
}

/** What `/` says the service does: prices, verdicts, or what this instance serves of them (offerSummary). */
function rootDescription(s: Surface): string {
  const { prices, verdicts } = offerSummary(s);
  if (prices && verdicts) return 'Computes prices for a context, and verdicts on proposed prices, with built-in, workspace and marketplace pricing functions.';
  if (prices) return 'Computes prices for a context with built-in, workspace and marketplace pricing functions.';
  if (verdicts) return 'Gives verdicts on proposed prices for a context, from the network\'s price observations.';
  return 'A pricing compute service; this instance serves neither prices nor verdicts (its operator turned them off): its OpenAPI document lists what it serves.';
}

/** The answer at `/`: a caller given only the base URL learns where to go, from what this instance serves. */
function rootDocument(base: string, s: Surface): Record<string, unknown> {
  const link = (method: 'get' | 'post', path: string) => (s.serves(method, path) ? `${base}${path}` : undefined);
  return {
    service: 'Pricing compute service',
    description: rootDescription(s),
    documents: {
      llms_txt: link('get', '/llms.txt'),
      agents_json: link('get', '/.well-known/agents.json'),
      mcp_json: s.mcp ? link('get', '/.well-known/mcp.json') : undefined,
      openapi: link('get', '/api/openapi.json'),
    },
    ...(s.offers('post', '/api/agents/register') ? { get_a_key: { method: 'POST', url: `${base}/api/agents/register`, body: { name: 'my-pricing-agent' }, note: 'A free sandbox key, no human needed.' } } : {}),
    ...(s.serves('post', '/api/public/compute/demo') ? { try_without_a_key: { method: 'POST', url: `${base}/api/public/compute/demo`, body: { context: { product_type: 'coffee', current_price: 4.5, currency: 'USD' } } } } : {}),
    ...(s.mcp ? { mcp: `${base}/api/mcp/rpc` } : {}),
    health: link('get', '/healthz'),
  };
}
