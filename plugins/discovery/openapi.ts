import { OpenAPIRegistry, OpenApiGeneratorV31, extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// Adds .openapi() to zod schemas; idempotent, needed before the registry reads them.
extendZodWithOpenApi(z);
import { errorBodySchema } from '../../core/errors';
import type { RegisteredRoute } from '../../core/http/pipeline';
import type { HttpMethod, MissingMethod, RouteSpec } from '../../core/http/route';

export { openApiPath } from '../../core/http/route';
import { openApiPath } from '../../core/http/route';
import { CONDITIONAL_SCHEMES, SECURITY_SCHEMES, accessExtensions, accessSentence, kindsOf, securityOf } from './openapi-security';
import { RESPONSE_HEADERS, headersFor, refusalsOf } from './openapi-responses';

/** The catch-all refusal: where an agent reads what the codes mean and what to do. */
const REFUSED =
  'Refused, in the Error shape: `code` says why, `hint` what to do, `next` the calls that help. The codes, what is retryable and when: /llms.txt ("Errors"); how credentials are sent: /.well-known/agents.json.';

const anyObject = z.record(z.string(), z.unknown());

/** application/json and its structured-syntax relatives (application/feed+json); everything else is text. */
const isJson = (type: string): boolean => /^application\/(?:[\w.-]+\+)?json$/.test(type);

/**
 * A response body in each content type the route answers with: the route's schema (else any object)
 * for JSON, a string for text (YAML, XML, HTML, event streams), which no object schema describes.
 */
function bodyContent(types: readonly string[], schema: z.ZodType = anyObject): Record<string, { schema: z.ZodType }> {
  return Object.fromEntries(types.map((t) => [t, { schema: isJson(t) ? schema : z.string() }]));
}

/** Whether a person's session or token can call the route (the kind whose workspace x-workspace-id picks). */
const acceptsPerson = (route: RouteSpec): boolean => (route.auth ?? 'required') !== 'public' && kindsOf(route).includes('person');

// The person authenticator reads it on every route a person may call.
const workspaceHeader = z.object({
  'x-workspace-id': z
    .string()
    .optional()
    .describe('For a person: the workspace to act in (one they are a member of, listed at GET /api/user); without it, their default workspace. Another workspace answers 404.'),
});

/**
 * The request headers an operation reads beyond its credentials: x-workspace-id for a person, If-None-Match where
 * conditional (`ifNoneMatch`: the registered parameter, so each operation $refs one definition), its own.
 */
function requestHeaders(spec: RouteSpec, ifNoneMatch: z.ZodType): z.ZodObject | undefined {
  const parts = [acceptsPerson(spec) ? workspaceHeader : undefined, spec.conditional ? z.object({ 'if-none-match': ifNoneMatch }) : undefined, spec.headers].filter(
    (h): h is z.ZodObject => h !== undefined,
  );
  return parts.length ? parts.reduce((all, h) => all.extend(h.shape)) : undefined;
}

function rawBodyContent(types: readonly string[], fields?: z.ZodObject): Record<string, { schema: z.ZodType }> {
  return Object.fromEntries(types.map((t) => [t, { schema: fields ?? (t === 'application/x-www-form-urlencoded' ? z.record(z.string(), z.string()) : z.record(z.string(), z.unknown())) }]));
}

/**
 * The OpenAPI 3.1 description, generated from the route declarations (their zod schemas), so code
 * and document cannot drift. Lists the production server only.
 */
/**
 * Without people (no accounts plugin: nobody signs in) a route's person credentials are not offered, unless a person is
 * all it takes, which its documentation then keeps saying (it answers 401 to everyone there).
 */
function withoutPeople(routes: readonly RegisteredRoute[]): RegisteredRoute[] {
  return routes.map((r) => {
    const kinds = kindsOf(r.spec);
    const others = kinds.filter((k) => k !== 'person');
    return others.length === kinds.length || others.length === 0 ? r : { ...r, spec: { ...r.spec, accepts: others } };
  });
}

export function buildOpenApi(all: readonly RegisteredRoute[], info: { version: string; serverUrl: string; people?: boolean }): Record<string, unknown> {
  const routes = info.people === false ? withoutPeople(all) : all;
  const registry = new OpenAPIRegistry();
  const used = new Set(routes.flatMap(({ spec }) => securityOf(spec).flatMap((req) => Object.keys(req))));
  for (const [name, scheme] of Object.entries(SECURITY_SCHEMES)) if (!CONDITIONAL_SCHEMES.has(name) || used.has(name)) registry.registerComponent('securitySchemes', name, scheme);
  for (const [name, header] of Object.entries(RESPONSE_HEADERS)) registry.registerComponent('headers', name, header);
  const ifNoneMatch = registry.registerParameter(
    'IfNoneMatch',
    z.string().optional().openapi({ param: { name: 'if-none-match', in: 'header', description: 'The ETag of the copy you hold: while the document is unchanged the answer is 304 without a body.' } }),
  );

  for (const { plugin, spec } of routes) {
    const responses: Record<string, { description: string; content?: Record<string, { schema: z.ZodType }>; headers?: Record<string, { $ref: string }> }> = {};
    const produces = spec.produces ?? ['application/json'];
    for (const [status, r] of Object.entries(spec.responses ?? {})) {
      if (!r) continue;
      // A success declared for its status alone still has a body (only 204, and what says noBody, has none).
      const refusal = /^[45]/.test(status);
      // Refusals are JSON whatever the route otherwise answers in.
      const content = r.schema ? bodyContent(refusal ? ['application/json'] : produces, r.schema) : status.startsWith('2') && status !== '204' && !r.noBody ? bodyContent(produces) : undefined;
      responses[status] = { description: r.description, ...(content ? { content } : {}) };
    }
    // A route that documents only refusals (MCP DELETE always answers 405) has no success to show.
    // Any other status than 200 is declared by the route itself (its `responses`), never guessed from its id.
    const onlyRefuses = Object.keys(responses).length > 0 && Object.keys(responses).every((s) => /^[45]/.test(s));
    if (!onlyRefuses && !Object.keys(responses).some((s) => s.startsWith('2'))) {
      responses['200'] = { description: 'Success.', content: bodyContent(produces) };
    }
    if (spec.conditional) responses['304'] ??= { description: 'Not Modified: If-None-Match named the current ETag; no body.' };
    const errorContent = { 'application/json': { schema: errorBodySchema } };
    // A route answering refusals in its own shape (MCP: JSON-RPC) gives its added refusals that shape too.
    const refusalContent = responses['4XX']?.content ?? errorContent;
    for (const [status, description] of Object.entries(refusalsOf(spec))) responses[status] ??= { description, content: refusalContent };
    responses['4XX'] ??= { description: REFUSED, content: errorContent };
    responses['5XX'] ??= { description: 'Failed on our side or upstream (the Error shape); retry after Retry-After when `retryable` is true (/llms.txt, "Errors").', content: errorContent };
    for (const [status, r] of Object.entries(responses)) {
      r.headers = Object.fromEntries(headersFor(spec, status).map((h) => [h, { $ref: `#/components/headers/${h}` }]));
    }
    const description = [spec.description, accessSentence(spec)].filter(Boolean).join('\n\n');
    registry.registerPath({
      method: spec.method,
      path: openApiPath(spec.path),
      operationId: spec.id,
      summary: spec.summary,
      ...(description ? { description } : {}),
      tags: [...(spec.tags ?? [plugin])],
      security: securityOf(spec),
      ...accessExtensions(spec),
      ...(spec.deprecated ? { deprecated: true } : {}),
      request: {
        ...(spec.params ? { params: spec.params as z.ZodObject } : {}),
        ...(spec.query ? { query: spec.query as z.ZodObject } : {}),
        ...(requestHeaders(spec, ifNoneMatch) ? { headers: requestHeaders(spec, ifNoneMatch) } : {}),
        ...(spec.body
          ? // An empty body is read as {}: a route that takes {} takes no body at all.
            { body: { required: !spec.body.safeParse({}).success, content: { 'application/json': { schema: spec.body, ...(spec.example !== undefined ? { example: spec.example } : {}) } } } }
          : spec.rawBody
            ? { body: { content: rawBodyContent(spec.consumes ?? ['application/x-www-form-urlencoded', 'application/json'], spec.rawBodyFields) } }
            : {}),
      },
      responses,
    });
  }
  for (const refused of refusedMethods(routes)) {
    registry.registerPath({
      method: refused.method,
      path: openApiPath(refused.path),
      operationId: `${refused.spec.id}.${refused.method}_not_allowed`,
      summary: `Not served: 405, Allow names the methods that are.`,
      tags: [...(refused.spec.tags ?? [refused.plugin])],
      // A 405 worded for its caller reads a credential if one is sent (never requires one, nor any scope).
      security: refused.readsCredential ? securityOf({ ...refused.spec, auth: 'optional', scopes: [], handlerScopes: [], fullAccess: false }) : [],
      ...(refused.spec.params ? { request: { params: refused.spec.params as z.ZodObject } } : {}),
      responses: {
        405: {
          description: `Always (method_not_allowed): ${refused.hint}`,
          content: { 'application/json': { schema: errorBodySchema } },
          headers: Object.fromEntries(['X-Request-Id', 'Allow'].map((h) => [h, { $ref: `#/components/headers/${h}` }])),
        },
      },
    });
  }
  const doc = new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'Pricing Compute Service',
      version: info.version,
      description: 'A network that computes prices: routing among pricing functions, price verification, agent onboarding, usage records.',
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: info.serverUrl, description: 'Production' }],
  });
  shareRefusals(doc as unknown as OpenApiDocument);
  const tags = [...new Set(routes.flatMap(({ plugin, spec }) => spec.tags ?? [plugin]))].sort();
  return { ...(doc as unknown as Record<string, unknown>), tags: tags.map((name) => ({ name, description: `${name} operations.` })) };
}

/**
 * The methods a path has no route for whose 405 a route declares (`missingMethods`: a GET of the keyless demo, a DELETE of
 * a function): each is documented as an operation answering 405 alone, so a client reading the document learns what
 * the call it might try gets. The 405 is sent before any guard, so it carries no rate or budget headers; one worded for
 * its caller (`forCaller`: the DELETE of a function) reads the credential sent, and is documented with the hint anyone gets.
 */
export function refusedMethods(routes: readonly RegisteredRoute[]): Array<{ plugin: string; spec: RouteSpec; path: string; method: HttpMethod; hint: string; readsCredential: boolean }> {
  const served = new Set(routes.map(({ spec }) => `${spec.method} ${spec.path}`));
  const out: Array<{ plugin: string; spec: RouteSpec; path: string; method: HttpMethod; hint: string; readsCredential: boolean }> = [];
  for (const { plugin, spec } of routes) {
    for (const [method, meant] of Object.entries(spec.missingMethods ?? {}) as Array<[HttpMethod, MissingMethod]>) {
      const key = `${method} ${spec.path}`;
      if (served.has(key)) continue;
      served.add(key);
      out.push({ plugin, spec, path: spec.path, method, hint: meant.hint, readsCredential: meant.forCaller !== undefined });
    }
  }
  return out;
}

interface ResponseObject {
  $ref?: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: { $ref?: string } }>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, { responses?: Record<string, ResponseObject> }>>;
  components?: Record<string, unknown>;
}

/** Refusals (and the 304) that many operations declare word for word: each distinct one is written once, in components.responses. */
const SHARED_REFUSALS: Record<string, string> = { '304': 'NotModified', '401': 'Unauthorized', '413': 'PayloadTooLarge', '415': 'UnsupportedMediaType', '429': 'RateLimited', '4XX': 'Refused', '5XX': 'Failed' };

/** A shared refusal's name: its kind, then how it differs (the demo's budget headers, no rate headers, a shape of its own). */
function refusalName(label: string, r: ResponseObject, taken: Record<string, unknown>): string {
  const headers = Object.keys(r.headers ?? {});
  let base = label;
  // A 304 has no body, and is sent only by the unmetered public documents.
  if (r.content) {
    if (headers.includes('X-Demo-Budget-Limit')) base += 'Demo';
    else if (!headers.includes('X-RateLimit-Limit')) base += 'Unmetered';
    if (r.content['application/json']?.schema?.$ref !== '#/components/schemas/Error') base += 'OwnShape';
  }
  let name = base;
  for (let i = 2; name in taken; i++) name = `${base}${i}`;
  return name;
}

/**
 * Every operation declared its refusals in full (description, headers, Error body), which made them half of the
 * document (an agent reading it pays for each copy): identical ones become one `$ref`d component.
 */
function shareRefusals(doc: OpenApiDocument): void {
  const shared: Record<string, ResponseObject> = {};
  const byContent = new Map<string, string>();
  for (const ops of Object.values(doc.paths)) {
    for (const op of Object.values(ops)) {
      for (const [status, label] of Object.entries(SHARED_REFUSALS)) {
        const r = op.responses?.[status];
        if (!r || r.$ref || !op.responses) continue;
        const key = `${status} ${JSON.stringify(r)}`;
        let name = byContent.get(key);
        if (name === undefined) {
          name = refusalName(label, r, shared);
          byContent.set(key, name);
          shared[name] = r;
        }
        op.responses[status] = { $ref: `#/components/responses/${name}` };
      }
    }
  }
  doc.components = { ...doc.components, responses: shared };
}
