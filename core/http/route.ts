import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { Channel, Principal, PrincipalKind } from '../auth';
import type { ApiError, NextStep } from '../errors';
import type { Logger } from '../logger';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Who may call a route. Routes need credentials unless their declaration says otherwise:
 * - `required` (default): a principal of an accepted kind, else 401;
 * - `optional`: credentials are checked when sent (one sent but unusable, such as another Authorization
 *   scheme, is refused as on a required route), anonymous callers are let through;
 * - `public`: no authentication at all.
 */
export type AuthPolicy = 'required' | 'optional' | 'public';

export interface Deprecation {
  /** Date the route was marked retiring (sent as the `Deprecation` header). */
  since: string;
  /** Date it stops working, once decided (sent as `Sunset`). */
  sunset?: string;
  /** Page describing the change (sent as `Link: <…>; rel="deprecation"`). */
  link: string;
}

export interface RequestContext<B = unknown, Q = unknown, P = unknown> {
  req: Request;
  res: Response;
  route: RouteSpec;
  requestId: string;
  principal: Principal | null;
  body: B;
  /** The JSON body as sent, before validation filled in defaults: what an example made of the caller's request starts from. */
  sent?: unknown;
  query: Q;
  params: P;
  clientIp: string;
  channel: Channel;
  log: Logger;
  /** Scratch space for hooks and decorators of this request (e.g. the usage record id). */
  state: Record<string, unknown>;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * What to undo when the caller is found gone just before the reply is sent (after the decorators):
   * a priced call marks its usage event not delivered, so nobody is charged for an answer nobody got.
   */
  notDelivered?: () => Promise<void>;
  /** Run once the reply is written, or once notDelivered has run for a caller found gone. */
  afterReply?: () => void;
  /**
   * A public document: a 200 JSON body goes out with a strong ETag of its bytes, and a GET or HEAD naming it in
   * If-None-Match gets 304 without the body (core/http/send-body.ts).
   */
  etag?: true;
}

/** Returned by handlers that wrote the response themselves (streams). */
export const HANDLED: unique symbol = Symbol('handled');
export type HandlerResult = Reply | typeof HANDLED;

/** The 405 of a method a path has no route for, as a route of the path declares it (`missingMethods`). */
export interface MissingMethod {
  /** The documented answer, and the one given where `forCaller` is not declared. */
  hint: string;
  example?: unknown;
  /**
   * The hint and example for this caller, where what it could do instead depends on who asks about what (a DELETE of a
   * function: the withdrawing PATCH only to a caller who may send it). Called with the request's credential read (no
   * credential, or one refused, is a null principal: the 405 holds whoever asks) and its path parameters as sent.
   */
  forCaller?: (ctx: RequestContext) => { hint: string; example?: unknown } | Promise<{ hint: string; example?: unknown }>;
}

export interface RouteSpec<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, P extends z.ZodType = z.ZodType> {
  /** Stable operation id, e.g. `compute.price`; used by OpenAPI, decorators and tests. */
  id: string;
  method: HttpMethod;
  /** Express path template, e.g. `/api/functions/:id`. */
  path: string;
  summary: string;
  description?: string;
  tags?: string[];
  auth?: AuthPolicy;
  /**
   * A check that runs before authentication and every other stage: when it answers (a reply, or HANDLED
   * after writing one), nothing else runs. For transport rules that must win over a credential error,
   * such as MCP's Origin check (a page of another site gets 403 whatever key it sends). It also runs
   * for methods the path has no route for (OPTIONS, PUT…), before their 405 or 204.
   */
  screen?: (ctx: RequestContext) => HandlerResult | undefined;
  /** Principal kinds the route accepts (default: any). */
  accepts?: readonly PrincipalKind[];
  /** 401 text for a credential of a kind the route does not accept. */
  wrongCredentialMessage?: string;
  wrongCredentialHint?: string;
  /** The `next` steps of that 401, in place of where to get a credential (for a route whose other credential is already held). */
  wrongCredentialNext?: NextStep[];
  /**
   * The keyless route doing what this one does (the verification demo): a 401, for no credential or one refused, offers
   * it in place of the `next` step of the same action (`try_demo`).
   */
  keylessTwin?: NextStep;
  /**
   * What a caller trying a method the path has no route for is told in its 405, in place of the bare list of methods:
   * where the operation it likely meant lives (DELETE of a record that is withdrawn, never deleted, say).
   */
  missingMethods?: Partial<Record<HttpMethod, MissingMethod>>;
  /** The route manages API keys (an agent token there answers 403 agent_cannot_manage_keys). */
  keyManagement?: boolean;
  /**
   * The route only gives up access (signing out, ending sessions, revoking a key): a suspended or rejected account,
   * which can otherwise only read, may still call it.
   */
  givesUpAccess?: boolean;
  /**
   * The body carries operations of its own, reads and writes (MCP's tools/call): authorizers treat the request as a
   * read, and the handler authorizes each write it runs (a suspended account lists and browses, and is refused a price).
   */
  authorizesEachOperation?: boolean;
  /**
   * The route is served but refuses every call for now (self-registration paused: 503), or, given the caller's address
   * (clientIp) where an answer is made for one caller, refuses that caller's (its registrations for the day spent):
   * while this holds, no refusal's next step, link or next action offers it. Called while answering: it must be cheap
   * (no store or database read).
   */
  closed?: (address?: string) => boolean;
  /** Whether an unclaimed agent sandbox (Agent Starter plan) may call the route (default: no). */
  sandbox?: boolean;
  /** Scopes required (checked by the registered authorizer). */
  scopes?: readonly string[];
  /**
   * Scopes the handler checks itself instead of the authorizer (team:admin: a key must name it, people act by their
   * role): the OpenAPI document names them beside `scopes`, the pipeline does not check them.
   */
  handlerScopes?: readonly string[];
  /**
   * The route changes workspace configuration that no named scope covers (functions, routing policies): a scoped
   * credential needs full access, as the registered authorizer defines it (identity: every ordinary scope but
   * proposal approval, what a legacy write key holds).
   */
  fullAccess?: boolean;
  /**
   * The route's only write is the usage event of the call it answers, and a recorded call whose answer is lost is marked
   * not delivered, not billed: a store failing under it leaves nothing for a retry to check. Its 503 says that nothing
   * was charged, not that a change may have been made.
   */
  recordsCallsOnly?: boolean;
  /** The reply carries a secret shown once (a new key, a claim link, an invitation token): sent with Cache-Control: no-store, so no cache keeps it. */
  returnsSecret?: boolean;
  /** Channel recorded for usage made through this route (default `api`). */
  channel?: Channel;
  /** Which rate-limit class applies; `none` skips the rate-limit guards. */
  rateLimit?: string;
  body?: B;
  query?: Q;
  params?: P;
  /** Request headers the route reads beyond credentials, for the OpenAPI document (an object of optional strings). */
  headers?: z.ZodObject;
  /** Hand the handler the unparsed body (`req.body` is a Buffer) instead of parsing JSON. */
  rawBody?: boolean;
  /** Content types an unparsed body may have, for OpenAPI (default: JSON and form-encoded). */
  consumes?: string[];
  /** The fields an unparsed body carries, for OpenAPI in each of `consumes` (the handler parses and checks it itself). */
  rawBodyFields?: z.ZodObject;
  /**
   * For a public route that authenticates its caller itself (the OAuth token endpoint): the security schemes it takes, for
   * OpenAPI; `bodyCredentials` adds the alternative of credentials in the body (no scheme).
   */
  selfAuthenticated?: { schemes: readonly string[]; bodyCredentials?: boolean };
  /**
   * The body is a list of calls answered each in its own place (a batch's `items`): BODY_MAX_DEPTH counts from an item,
   * as on a single call (the list and its entry are two levels more), and text PostgreSQL cannot store is left to the
   * handler to refuse in the item's place, not for the whole body.
   */
  bodyOfItems?: boolean;
  /**
   * Dotted body paths where an amount may come as a JSON number (`proposed_price`, `context.unit_cost`): one there whose
   * text a double cannot hold (20.123456789012345 arrives as …344) is refused asking for the decimal string, judged on
   * the raw body text (core/http/json-numbers.ts). A route reading amounts only as strings needs none.
   */
  exactNumbers?: readonly string[];
  /** A request body that passes `body`, returned with invalid_json and validation errors. */
  example?: unknown;
  /**
   * An example made from the body the caller sent (what was refused replaced or left out): returned
   * with a validation error instead of `example` when it passes `body`. It runs after authorization, with the
   * params validated, so it may read what the caller's change applies to (a stored record).
   */
  exampleFor?: (sent: unknown, ctx: RequestContext) => unknown;
  /**
   * The example of a body refused for text that cannot be stored, when what was sent without that text is not one (a
   * field whose loss changes what the request means, such as the function a call pins); undefined keeps that default.
   */
  unstorableExample?: (sent: unknown) => unknown;
  /**
   * A refusal that depends on the caller alone (a role the route needs), checked with the scopes and
   * plan, before the body: a caller who can never use the route is not coached into fixing a body.
   */
  precheck?: (ctx: RequestContext) => Promise<void> | void;
  /**
   * A raw-body route speaking its own protocol's errors (MCP's JSON-RPC, OAuth's RFC 6749) answers a body refused while
   * read (too large, undecodable, cut short) itself, in place of the handler, after the credential checks.
   */
  answerBodyRefusal?: (err: ApiError, ctx: RequestContext) => HandlerResult | Promise<HandlerResult>;
  /** Every refusal of the route (from its guards, validation or handler) passes through this on its way out. */
  refusal?: (err: ApiError, req: Request) => ApiError;
  /** Response schemas by status, for the OpenAPI document; 4XX/5XX replace the common error shape where a route answers refusals in another (MCP: JSON-RPC). */
  responses?: Partial<Record<number | '4XX' | '5XX', { description: string; schema?: z.ZodType; /** A success answered without a body (a 202 that only acknowledges). */ noBody?: true }>>;
  deprecated?: Deprecation;
  /** Content types the route answers with, for OpenAPI (default application/json). */
  produces?: string[];
  /**
   * The route answers its 200 with a strong ETag and a GET or HEAD naming it in If-None-Match with 304 and no body (its
   * handler sends through sendBody with `etag`, or returns a Reply with `etag`): declared so in OpenAPI, where a client
   * learns it may poll conditionally.
   */
  conditional?: true;
  handler: (ctx: RequestContext<z.output<B>, z.output<Q>, z.output<P>>) => Promise<HandlerResult> | HandlerResult;
}

export function defineRoute<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, P extends z.ZodType = z.ZodType>(
  spec: RouteSpec<B, Q, P>,
): RouteSpec<B, Q, P> {
  return spec;
}

export const ok = (body: unknown, headers?: Record<string, string>): Reply => ({ status: 200, body, ...(headers ? { headers } : {}) });
export const created = (body: unknown, headers?: Record<string, string>): Reply => ({ status: 201, body, ...(headers ? { headers } : {}) });
export const accepted = (body?: unknown): Reply => ({ status: 202, body });
export const noContent = (): Reply => ({ status: 204 });

/** Express path template → the template SPEC and OpenAPI write (`/a/:id` → `/a/{id}`), also in messages. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/**
 * A 401's `next` offers the route's keyless twin (RouteSpec.keylessTwin) in place of the step of the same action, whatever
 * the credential's trouble: none sent, or one refused (unknown, malformed, revoked). The pipeline applies it to every
 * refusal of the route, once: the refusal of a sent credential is made by the authenticators, which know no route.
 */
export function offeringKeylessTwin(route: RouteSpec, err: ApiError): ApiError {
  const twin = route.keylessTwin;
  const next = err.extras.next;
  if (!twin || err.status !== 401 || !next?.some((n) => n.action === twin.action)) return err;
  return err.with({ next: next.map((n) => (n.action === twin.action ? twin : n)) });
}
