import type { Request, RequestHandler, Response } from 'express';
import { ApiError } from '../errors';
import type { Hooks } from '../hooks';
import type { Deprecation, HttpMethod, MissingMethod, RequestContext, RouteSpec } from './route';

/** A path's deprecation signals (Deprecation, Sunset, Link) on an answer of it. */
export function deprecationHeaders(res: Response, d: Deprecation | undefined): void {
  if (!d) return;
  res.setHeader('Deprecation', `@${Math.floor(Date.parse(d.since) / 1000)}`);
  if (d.sunset) res.setHeader('Sunset', new Date(d.sunset).toUTCString());
  res.setHeader('Link', `<${d.link}>; rel="deprecation"; type="text/html"`);
}

/**
 * A declared 405's hint and example for the caller who asked (`MissingMethod.forCaller`): its credential read, as a route
 * would, but nothing refused for it. A credential missing, refused, or unreadable just now is a caller who is told the
 * documented answer, which holds for anyone: the method is served to nobody. Its guards do not run, as for every 405.
 */
export async function answerForCaller(hooks: Hooks, ctx: RequestContext, meant: MissingMethod): Promise<{ hint: string; example?: unknown }> {
  if (!meant.forCaller) return meant;
  try {
    ctx.principal = await hooks.authenticate(ctx.req);
  } catch {
    ctx.principal = null;
  }
  return meant.forCaller(ctx);
}

/** The 405 helper: `Allow` header plus a hint naming the methods the path accepts, and the path's deprecation signals. */
export function methodNotAllowed(
  path: string,
  methods: readonly HttpMethod[],
  deprecated?: Deprecation,
  example?: unknown,
  missing: RouteSpec['missingMethods'] = {},
  askCaller?: (req: Request, res: Response, meant: MissingMethod) => Promise<{ hint: string; example?: unknown }>,
): RequestHandler {
  const allowed = methods.map((m) => m.toUpperCase());
  if (allowed.includes('GET')) allowed.push('HEAD');
  const allow = allowed.join(', ');
  return (req, res, next) => {
    res.locals.routeTemplate = path;
    deprecationHeaders(res, deprecated);
    if (req.method === 'OPTIONS') {
      res.setHeader('Allow', `${allow}, OPTIONS`);
      res.status(204).end();
      return;
    }
    // The path as the caller sent it (not Express's template with its :params), the methods as a reader lists them.
    const methods = allowed.filter((m) => m !== 'HEAD');
    const listed = methods.length > 1 ? `${methods.slice(0, -1).join(', ')} or ${methods.at(-1) ?? ''}` : (methods[0] ?? '');
    // A method the routes say what to do instead of (missingMethods) gets that hint and its example, for this caller
    // where the route words it so.
    const meant = missing[req.method.toLowerCase() as HttpMethod];
    const refuse = (said: { hint: string; example?: unknown } | undefined): void => {
      const shown = said ? said.example : example;
      next(
        new ApiError('method_not_allowed', `${req.method} is not supported on ${req.path}.`, {
          hint: said?.hint ?? (example === undefined ? `Use ${listed} on this path.` : `Use ${listed} on this path; example is a body it takes.`),
          headers: { Allow: allow },
          ...(shown === undefined ? {} : { example: shown }),
        }),
      );
    };
    if (meant?.forCaller && askCaller) askCaller(req, res, meant).then(refuse, next);
    else refuse(meant);
  };
}
