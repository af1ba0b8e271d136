/**
 * Serving the common requests without Express's application router: a direct route's stages run as
 * the router would run them, on request and response objects born with the application's prototypes.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, Express, NextFunction, Request, RequestHandler, Response } from 'express';
import { ApiError } from '../errors';

/** Runs `leading` then `stages` as Express would run consecutive handlers; an error, or running out of handlers, goes to `done`. */
export function runStages(req: Request, res: Response, leading: readonly RequestHandler[], stages: readonly RequestHandler[], done: NextFunction): void {
  let i = 0;
  const step = (err?: unknown): void => {
    if (err !== undefined && err !== null) {
      done(err);
      return;
    }
    const handler = i < leading.length ? leading[i] : stages[i - leading.length];
    i++;
    // A route's last stage always answers or fails; should one fall through, the request is not found rather than served twice.
    if (!handler) {
      done(new ApiError('not_found', `No route matches ${req.method} ${req.path}.`));
      return;
    }
    // As Express does: a synchronous throw or a rejected promise becomes the stage's error.
    try {
      const out = handler(req, res, step);
      if (out instanceof Promise) out.catch((e: unknown) => step(e ?? new Error('Rejected promise')));
    } catch (e) {
      step(e);
    }
  };
  step();
}

/** The path of a request target, without its query (origin-form targets only; others are left to Express). */
export function targetPath(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * Request and response classes for `http.createServer` whose instances are born with the
 * application's Express prototypes (`app.request`, `app.response`) in their chain. Express gives
 * each request its prototypes with Object.setPrototypeOf; the map change leaves every request and
 * response object with a shape of its own, so the property accesses of Node's HTTP code, Express and
 * ours on them stay slow and the objects larger (on the compute benchmark, main-thread CPU per
 * request fell by about a third without it). Here the change happens once, on the classes.
 */
export function appMessageClasses(app: Express): { IncomingMessage: typeof IncomingMessage; ServerResponse: typeof ServerResponse } {
  class AppRequest extends IncomingMessage {}
  class AppResponse extends ServerResponse {}
  Object.setPrototypeOf(AppRequest.prototype, app.request as object);
  Object.setPrototypeOf(AppResponse.prototype, app.response as object);
  // Requests Express routes itself (paths with parameters) get the same: its app.handle sets these
  // prototypes, and setting the prototype an object already has changes nothing.
  app.request = AppRequest.prototype as unknown as Express['request'];
  app.response = AppResponse.prototype as unknown as Express['response'];
  return { IncomingMessage: AppRequest, ServerResponse: AppResponse as typeof ServerResponse };
}

/**
 * Serves a direct route without Express's application router: the request and response get what
 * `app.handle` gives them (prototypes, back references, locals), then the application's leading
 * middleware and the route's stages run, and an error goes to the error handler — the order the
 * application router would follow, minus its per-request walk and closures.
 */
export function dispatchDirect(app: Express, request: IncomingMessage, response: ServerResponse, leading: readonly RequestHandler[], stages: readonly RequestHandler[], onError: ErrorRequestHandler): void {
  // Born with the application's prototypes when the server uses appMessageClasses; otherwise set here.
  const req = (Object.getPrototypeOf(request) === app.request ? request : Object.setPrototypeOf(request, app.request as object)) as Request;
  const res = (Object.getPrototypeOf(response) === app.response ? response : Object.setPrototypeOf(response, app.response as object)) as Response;
  req.res = res;
  res.req = req;
  res.locals = Object.create(null) as Response['locals'];
  req.params = {};
  req.baseUrl = '';
  req.originalUrl = req.url;
  const fail: NextFunction = (err?: unknown) => {
    void onError(err, req, res, () => undefined);
  };
  runStages(req, res, leading, stages, fail);
}
