import express from 'express';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response, Router } from 'express';
import { clientIp } from '../address';
import { ApiError, isApiError } from '../errors';
import type { Principal } from '../auth';
import type { Hooks, ResponseDecorator } from '../hooks';
import type { Logger } from '../logger';
import { validate, validateQuery } from '../validation';
import { callerGone } from './caller-gone';
import { invalidJson, parseJsonBody, refuseUnstorableText, sentWithExactStrings, withInexactNumbers } from './json-body';
import { bodyReadError, isUndecodablePath, undecodablePathError } from './middleware';
import { runStages } from './direct-dispatch';
import { answerForCaller, deprecationHeaders, methodNotAllowed } from './method-not-allowed';
import { isStaticPath, templateMatcher, undecodableParam } from './path-templates';
import { HANDLED, offeringKeylessTwin } from './route';
import { sendBody } from './send-body';
import { passingExample } from './sent-example';
import type { Deprecation, HttpMethod, Reply, RequestContext, RouteSpec } from './route';

export interface RegisteredRoute {
  plugin: string;
  spec: RouteSpec;
}

/** All routes declared by the enabled plugins; the source for mounting, OpenAPI and route tests. */
export class RouteTable {
  private readonly routes: RegisteredRoute[] = [];
  private readonly byId = new Map<string, RouteSpec>();

  add(plugin: string, spec: RouteSpec): void {
    const clash = this.routes.find((r) => r.spec.method === spec.method && r.spec.path === spec.path);
    if (clash) throw new Error(`Route ${spec.method.toUpperCase()} ${spec.path} of plugin "${plugin}" is already declared by plugin "${clash.plugin}".`);
    const sameId = this.routes.find((r) => r.spec.id === spec.id);
    if (sameId) throw new Error(`Route id "${spec.id}" of plugin "${plugin}" is already used by plugin "${sameId.plugin}".`);
    this.routes.push({ plugin, spec });
    this.byId.set(spec.id, spec);
  }

  all(): readonly RegisteredRoute[] {
    return this.routes;
  }

  find(id: string): RouteSpec | undefined {
    return this.byId.get(id);
  }

  /**
   * Whether a route serves `method path`: a path as a refusal's next step gives it, with {placeholders} or <PLACEHOLDERS>
   * or concrete values where the route has parameters; a query is ignored.
   */
  serves(method: string, path: string): boolean {
    const concrete = path.split('?')[0]?.replace(/\{[^}/]+\}|<[^>/]+>/g, 'x') ?? '';
    return this.routes.some(({ spec }) => spec.method === method.toLowerCase() && routePattern(spec.path).test(concrete));
  }

  /**
   * Whether `method path` is served and open now (not `closed`): what a next step or a link may offer; `address`, the
   * caller's (clientIp) when the offer is made to one caller.
   */
  offers(method: string, path: string, address?: string): boolean {
    const concrete = path.split('?')[0]?.replace(/\{[^}/]+\}|<[^>/]+>/g, 'x') ?? '';
    return this.routes.some(({ spec }) => spec.method === method.toLowerCase() && routePattern(spec.path).test(concrete) && !spec.closed?.(address));
  }
}

const patterns = new Map<string, RegExp>();

/** An Express route path as a regular expression over concrete paths (`:id` matches one segment). */
function routePattern(path: string): RegExp {
  let re = patterns.get(path);
  if (!re) {
    re = new RegExp(`^${path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/')}/?$`);
    patterns.set(path, re);
  }
  return re;
}

export interface PipelineDeps {
  hooks: Hooks;
  log: Logger;
  bodyLimitBytes: number;
  /** Deepest nesting of arrays and objects a JSON body may have. */
  bodyMaxDepth: number;
}

/**
 * Reads a route's body. A body its Content-Encoding cannot decode (a broken gzip, deflate or br
 * stream; the reader says 400 without a type) is a body that is not JSON on a JSON route (the MCP
 * endpoint's raw JSON-RPC included), and a bad request on another raw one (OAuth's form or JSON);
 * the reader's other refusals (too large, unknown encoding, cut short) keep theirs.
 *
 * A body refused while read (too large, undecodable) is kept for the route handler to throw after
 * the guards, so the refusal counts and carries the rate and budget headers like any other answer
 * of the route (the demo's budget headers are promised on every answer).
 */
function bodyReader(rawBody: RequestHandler, route: RouteSpec): RequestHandler {
  return (req, res, next) => {
    void rawBody(req, res, (err?: unknown) => {
      const e = err as { type?: string; status?: number; message?: string } | undefined;
      if (!e) return next();
      if (e.type !== undefined || e.status !== 400) res.locals.bodyRefusal = bodyReadError(err) ?? err;
      else {
        const encoding = req.headers['content-encoding'] ?? 'identity';
        const what = `Request body could not be decoded as Content-Encoding ${encoding} (${e.message ?? 'bad stream'}).`;
        const json = route.body !== undefined || (route.consumes?.length === 1 && route.consumes[0] === 'application/json');
        res.locals.bodyRefusal = json ? invalidJson(route, what) : new ApiError('bad_request', what, { hint: 'Send the body uncompressed, or compressed whole with the encoding you name.' });
      }
      next();
    });
  };
}

export function sendReply(res: Response, reply: Reply): void {
  if (reply.headers) for (const [k, v] of Object.entries(reply.headers)) res.setHeader(k, v);
  res.status(reply.status);
  if (reply.body === undefined) res.end();
  else if (reply.status >= 200 && reply.status < 300 && reply.status !== 204 && reply.status !== 205 && !res.hasHeader('Content-Type') && !res.hasHeader('ETag') && !res.hasHeader('Last-Modified') && !res.hasHeader('Transfer-Encoding')) {
    // What res.json writes for a plain JSON reply (Express's ETags are off: a reply asks for one), without its
    // content-type parsing and formatting: same headers, same bytes.
    const json = JSON.stringify(reply.body);
    if (json === undefined) {
      res.json(reply.body);
      return;
    }
    sendBody(res, json, 'application/json; charset=utf-8', { etag: reply.etag === true });
  } else res.json(reply.body);
}

/**
 * What a path announces on answers that belong to none of its operations (405, OPTIONS): the path
 * retires once every operation on it does, so it announces the one that sunsets last (undated ones
 * last of all); a path keeping a current operation announces nothing.
 */
function pathDeprecation(specs: readonly RouteSpec[]): Deprecation | undefined {
  const retiring = specs.flatMap((s) => (s.deprecated ? [s.deprecated] : []));
  if (retiring.length === 0 || retiring.length < specs.length) return undefined;
  const end = (d: Deprecation): number => (d.sunset ? Date.parse(d.sunset) : Infinity);
  return retiring.reduce((last, d) => (end(d) > end(last) ? d : last));
}

/** A request's context for `route`, before authentication: no principal, body or query yet. */
function requestContext(req: Request, res: Response, route: RouteSpec): RequestContext {
  return {
    req,
    res,
    route,
    requestId: res.locals.requestId as string,
    principal: null,
    body: undefined,
    // Declared here so that setting it later keeps the object's shape (V8 hidden class).
    sent: undefined,
    query: undefined,
    params: req.params,
    clientIp: clientIp(req),
    channel: route.channel ?? 'api',
    // Read on use: the request's child logger is only made when something logs.
    get log() {
      return res.locals.log as Logger;
    },
    state: {},
  };
}

/** A refused body's error, with an example made from what was sent when the route makes one that passes (else the route's own). */
async function withExampleFromSent(route: RouteSpec, err: unknown, sent: unknown, ctx: RequestContext, sentIsMended = false): Promise<unknown> {
  if (!isApiError(err) || !(route.exampleFor || sentIsMended)) return err;
  // A body mended already (its inexact numbers made strings) may pass as it is, where exampleFor makes none.
  const made = route.exampleFor ? await route.exampleFor(sent, ctx) : undefined;
  const better = passingExample(route.body as NonNullable<RouteSpec['body']>, made ?? (sentIsMended ? sent : undefined));
  return better === undefined ? err : err.with({ example: better });
}

/** One Express handler running every stage of the request pipeline for a declared route. */
function routeHandler(route: RouteSpec, deps: PipelineDeps): RequestHandler {
  const { hooks } = deps;
  const decorators = () => hooks.decorators.filter((d) => d.appliesTo(route));
  let cachedDecorators: ReturnType<typeof decorators> | null = null;
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const ctx = requestContext(req, res, route);
      const screened = route.screen?.(ctx);
      if (screened !== undefined) {
        if (screened !== HANDLED) sendReply(res, screened);
        return;
      }
      const policy = route.auth ?? 'required';
      // A refused credential's 401, and the 404 of a workspace the caller is no member of (a person's x-workspace-id),
      // are held until after the guards (like a refused body): such a request counts against its address's rate (there
      // is no workspace to count it against) and carries the rate headers, whichever header the credential came in.
      // Anything else (a store that failed, too many failed credentials from the address) is thrown at once.
      let principal: Principal | null = null;
      let refusal: ApiError | undefined;
      if (policy !== 'public') {
        try {
          principal = await hooks.authenticate(req);
        } catch (err) {
          if (!isApiError(err) || (err.status !== 401 && err.status !== 404)) throw err;
          refusal = err;
        }
      }
      ctx.principal = principal;
      // Guards (request rates, budgets) before authorization: a refused request counts and carries the
      // rate headers too, one without a credential (counted for its address), with a credential refused
      // (held until now, counted for its address too) or with the wrong kind included.
      for (const g of hooks.guards) await g.run(ctx);
      if (refusal !== undefined) throw refusal;
      // No credential sent (one sent and not recognised was refused by authenticate, and held above).
      if (!principal && policy === 'required') throw hooks.unauthorized(route, 'missing', { req, principal });
      if (principal && route.accepts && !route.accepts.includes(principal.kind)) throw hooks.unauthorized(route, 'wrong_kind', { req, principal });
      if (principal) {
        if (hooks.authorizers.length === 0 && route.scopes?.length) {
          const granted = principal.scopes;
          const missing = granted === null ? [] : route.scopes.filter((s) => !granted.includes(s));
          if (missing.length) throw new ApiError('insufficient_scope', 'The credential lacks a required scope.', { fields: { required_scopes: route.scopes } });
        }
        for (const a of hooks.authorizers) await a.authorize(principal, route, req);
      }
      if (principal && route.precheck) await route.precheck(ctx);
      // After the credential and its permissions: a caller without them hears that first, whatever it sent.
      const heldBody = res.locals.bodyRefusal as unknown;
      const answerBody = route.answerBodyRefusal;
      if (heldBody !== undefined && !(answerBody && isApiError(heldBody))) throw heldBody;
      if (route.params) ctx.params = validate(route.params, req.params, { where: 'params' });
      if (route.query) ctx.query = validateQuery(route.query, req.query as Record<string, unknown>);
      if (route.body) {
        const parsed = parseJsonBody(req, route, deps.bodyMaxDepth);
        ctx.sent = parsed.value;
        let failure: unknown;
        try {
          ctx.body = validate(route.body, parsed.value, { where: 'body', example: route.example });
        } catch (err) {
          failure = err;
        }
        const refused = withInexactNumbers(failure, parsed, route);
        if (refused !== undefined) {
          const sent = sentWithExactStrings(parsed);
          throw await withExampleFromSent(route, refused, sent, ctx, sent !== parsed.value);
        }
        if (!route.bodyOfItems) refuseUnstorableText(parsed, route);
      }
      const result = heldBody !== undefined && answerBody ? await answerBody(heldBody, ctx) : await route.handler(ctx);
      if (result === HANDLED) return;
      try {
        cachedDecorators ??= decorators();
        if (result.status < 400) for (const d of cachedDecorators) await decorateOrLog(d, ctx, result);
        // The last moment before the reply is written: a caller that left during the decorators gets nothing, so pays nothing.
        if (result.notDelivered && callerGone(req)) return void (await result.notDelivered());
        if (route.returnsSecret) {
          res.setHeader('Cache-Control', 'no-store');
          res.setHeader('Pragma', 'no-cache');
        }
        sendReply(res, result);
      } finally {
        result.afterReply?.();
      }
    } catch (err) {
      const refused = isApiError(err) ? offeringKeylessTwin(route, err) : err;
      next(route.refusal && isApiError(refused) ? route.refusal(refused, req) : refused);
    }
  };
}

/**
 * Runs a decorator on a reply the handler already produced. The handler's work is done by then (a
 * priced call recorded and charged), so a decorator that fails leaves the reply as it was and is
 * logged: a 500 in its place would hide a result the caller was charged for.
 */
async function decorateOrLog(d: ResponseDecorator, ctx: RequestContext, reply: Reply): Promise<void> {
  try {
    await d.decorate(ctx, reply);
  } catch (err) {
    ctx.log.error({ err, decorator: d.name }, 'response decorator failed; the reply goes out without it');
  }
}

/**
 * Routes found by a map lookup on exact method and path: parameterless paths that no earlier
 * parameterised route would catch. Anything else (other spellings, HEAD, OPTIONS, parameters) goes
 * through the Express router, which behaves as before.
 */
export interface DirectRoutes {
  /** Middleware to mount before the router: serves a direct route without the router's walk. */
  middleware: RequestHandler;
  /** The stages of the route for this method and path, if it is a direct route. */
  lookup(method: string | undefined, path: string): readonly RequestHandler[] | undefined;
}

/**
 * Mounts every declared route on `router`; paths with routes answer other methods with 405 and an
 * `Allow` header. Also returns the direct routes, so the common requests skip Express's walk over
 * every route (compute is the 43rd of ~100 layers).
 */
export function mountRoutes(router: Router, table: RouteTable, deps: PipelineDeps): DirectRoutes {
  const specsByPath = new Map<string, RouteSpec[]>();
  const rawBody = express.raw({ type: () => true, limit: deps.bodyLimitBytes });
  const direct = new Map<string, Map<string, RequestHandler[]>>();
  const earlier: Array<{ method: HttpMethod; matcher: RegExp }> = [];
  // A static path's other methods, where a parameterised route of that method would take the path as
  // its parameter (GET /api/agents/register would be GET /api/agents/:id, answering 401 for an agent
  // id): mounted first, they answer the static path's 405.
  for (const [path, methods] of shadowedMethods(table)) {
    const handler = otherMethods(path, table.all().filter(({ spec }) => spec.path === path).map(({ spec }) => spec), deps.hooks);
    for (const method of methods) router[method](path, handler);
  }
  for (const { spec } of table.all()) {
    const stages: RequestHandler[] = [
      (req, res, next) => {
        res.locals.routeTemplate = spec.path;
        if (spec.recordsCallsOnly) res.locals.recordsCallsOnly = true;
        // Here, before the body is read: a body refused as too large or undecodable is an answer of the operation too.
        deprecationHeaders(res, spec.deprecated);
        next();
      },
    ];
    if (spec.body || spec.rawBody) stages.push(bodyReader(rawBody, spec));
    stages.push(routeHandler(spec, deps));
    router[spec.method](spec.path, ...stages);
    const onPath = specsByPath.get(spec.path) ?? [];
    onPath.push(spec);
    specsByPath.set(spec.path, onPath);
    if (isStaticPath(spec.path) && !earlier.some((e) => e.method === spec.method && e.matcher.test(spec.path))) {
      const method = spec.method.toUpperCase();
      const paths = direct.get(method) ?? new Map<string, RequestHandler[]>();
      paths.set(spec.path, stages);
      direct.set(method, paths);
    }
    earlier.push({ method: spec.method, matcher: templateMatcher(spec.path) });
  }
  for (const [path, specs] of specsByPath) {
    router.all(path, otherMethods(path, specs, deps.hooks));
  }
  // Express fails to decode a parameter before any route runs; only here is it known which route that was.
  const paramAt = undecodableParam([...specsByPath.keys()]);
  const namesUndecodableParam: ErrorRequestHandler = (err, req, res, next) => {
    if (!isUndecodablePath(err)) return next(err);
    const hit = paramAt(req.path);
    if (hit) {
      res.locals.routeTemplate = hit.template;
      const specs = specsByPath.get(hit.template) ?? [];
      const method = req.method === 'HEAD' ? 'GET' : req.method;
      const operation = specs.find((s) => s.method.toUpperCase() === method);
      deprecationHeaders(res, operation ? operation.deprecated : pathDeprecation(specs));
    }
    next(undecodablePathError(hit?.param));
  };
  router.use(namesUndecodableParam);
  const lookup = (method: string | undefined, path: string) => (method === undefined ? undefined : direct.get(method)?.get(path));
  return {
    lookup,
    middleware: (req, res, next) => {
      const stages = lookup(req.method, req.path);
      if (!stages) {
        next();
        return;
      }
      runStages(req, res, [], stages, next);
    },
  };
}

/** The name of the handlers that answer a path's other methods with 405 (no operation of their own). */
export const METHOD_NOT_ALLOWED = 'methodNotAllowed';

/** Per static path, the methods it has no route for that a parameterised route would answer instead. */
function shadowedMethods(table: RouteTable): Map<string, HttpMethod[]> {
  const specs = table.all().map(({ spec }) => spec);
  const out = new Map<string, HttpMethod[]>();
  for (const path of new Set(specs.filter((s) => isStaticPath(s.path)).map((s) => s.path))) {
    const own = new Set(specs.filter((s) => s.path === path).map((s) => s.method));
    const shadowed = [...new Set(specs.filter((s) => !isStaticPath(s.path) && !own.has(s.method) && templateMatcher(s.path).test(path)).map((s) => s.method))];
    if (shadowed.length) out.set(path, shadowed);
  }
  return out;
}

/**
 * The answer of a path's methods without a route: 405 (OPTIONS 204) with `Allow`, after the screen
 * of the path's routes when they have one (MCP's Origin rule covers every method). Named, so the
 * route listing (OpenAPI tests) tells these from operations.
 */
function otherMethods(path: string, specs: RouteSpec[], hooks: Hooks): RequestHandler {
  const screening = specs.find((spec) => spec.screen);
  // A path of one route taking a body: the 405 shows a body it takes, so the retry with the right method works as sent.
  const only = specs.length === 1 ? specs[0] : undefined;
  const missing = Object.assign({}, ...specs.map((spec) => spec.missingMethods ?? {})) as NonNullable<RouteSpec['missingMethods']>;
  const declaring = new Map(specs.flatMap((spec) => Object.keys(spec.missingMethods ?? {}).map((m) => [m, spec] as const)));
  const refuse = methodNotAllowed(path, specs.map((spec) => spec.method), pathDeprecation(specs), only?.body ? only.example : undefined, missing, (req, res, meant) =>
    answerForCaller(hooks, requestContext(req, res, declaring.get(req.method.toLowerCase()) ?? (specs[0] as RouteSpec)), meant),
  );
  const handler = screening ? screenedFirst(screening, refuse) : refuse;
  Object.defineProperty(handler, 'name', { value: METHOD_NOT_ALLOWED });
  return handler;
}

/** Runs `route`'s screen on a request for a method the path has no route for; when it does not answer, `then` does. */
function screenedFirst(route: RouteSpec, then: RequestHandler): RequestHandler {
  return (req, res, next) => {
    res.locals.routeTemplate = route.path;
    const screened = route.screen?.(requestContext(req, res, route));
    if (screened === undefined) then(req, res, next);
    else if (screened !== HANDLED) sendReply(res, screened);
  };
}
