import type { Request } from 'express';
import type { Admitter, AdmissionRequest, Reservation } from './admission';
import { freeReservation } from './admission';
import type { Authenticator, Principal } from './auth';
import { ApiError } from './errors';
import type { RequestContext, Reply, RouteSpec } from './http/route';

/** Checks a principal against a route's requirements (scopes, plan). Throws a 403 ApiError. */
export interface Authorizer {
  name: string;
  authorize(principal: Principal, route: RouteSpec, req: Request): Promise<void> | void;
}

/** Runs after authentication, before authorization and before the body is read (request rates, budgets). */
export interface Guard {
  name: string;
  run(ctx: RequestContext): Promise<void> | void;
}

/** Adds to successful responses without the route knowing who adds what. */
export interface ResponseDecorator {
  name: string;
  appliesTo(route: RouteSpec): boolean;
  decorate(ctx: RequestContext, reply: Reply): Promise<void> | void;
}

/**
 * Builds the error for a request without an accepted credential: none recognised (`missing`), or a
 * principal of a kind the route does not take (`wrong_kind`). Owned by the identity plugin when
 * enabled.
 */
export type UnauthorizedFactory = (route: RouteSpec, reason: 'missing' | 'wrong_kind', ctx: { req: Request; principal: Principal | null }) => ApiError;

/**
 * The kernel's hook points. Plugins add to them in `register`; the HTTP pipeline and the compute
 * path call them in order.
 */
export class Hooks {
  readonly authenticators: Authenticator[] = [];
  readonly authorizers: Authorizer[] = [];
  readonly guards: Guard[] = [];
  readonly admitters: Admitter[] = [];
  readonly decorators: ResponseDecorator[] = [];
  unauthorized: UnauthorizedFactory = (route, reason) =>
    new ApiError('unauthorized', reason === 'missing' ? 'This route needs credentials.' : (route.wrongCredentialMessage ?? 'This route does not accept this kind of credential.'), {
      fields: { retryable: false },
      next: [],
      headers: { 'WWW-Authenticate': 'Bearer realm="pricing-compute"' },
    });

  /**
   * Whether a request carries a credential at all, recognised or not. One that no authenticator
   * accepts is refused (`refuseUnrecognised`) rather than ignored, on routes where a credential is
   * optional too: a caller whose key is mistyped must learn so, not be served as anonymous.
   */
  credentialSent: (req: Request) => boolean = () => false;

  /**
   * Throws the refusal of a credential that was sent (`credentialSent`) and that no authenticator
   * takes: a 401, or whatever the owner of the credentials answers first (the identity plugin counts
   * it as a rejected credential of the address, and answers an address that sent too many 429).
   */
  refuseUnrecognised: (req: Request) => Promise<never> = () =>
    Promise.reject(
      new ApiError('invalid_credentials', 'The credential sent is not one this service recognises.', {
        fields: { retryable: false },
        next: [],
        headers: { 'WWW-Authenticate': 'Bearer realm="pricing-compute", error="invalid_token"' },
      }),
    );

  addAuthenticator(a: Authenticator): void {
    this.authenticators.push(a);
  }
  addAuthorizer(a: Authorizer): void {
    this.authorizers.push(a);
  }
  addGuard(g: Guard): void {
    this.guards.push(g);
  }
  addAdmitter(a: Admitter): void {
    this.admitters.push(a);
  }
  addDecorator(d: ResponseDecorator): void {
    this.decorators.push(d);
  }

  /**
   * First authenticator that recognises a credential wins; null when none was sent. Throws (401) for
   * a credential an authenticator rejects, and for one sent that none recognises.
   */
  async authenticate(req: Request): Promise<Principal | null> {
    for (const a of this.authenticators) {
      const principal = await a.authenticate(req);
      if (principal) return principal;
    }
    if (this.credentialSent(req)) await this.refuseUnrecognised(req);
    return null;
  }

  /**
   * Decides how a compute is paid for. Admitters are asked in registration order; the first that
   * takes the request holds a reservation; otherwise the call is free.
   */
  async admit(request: AdmissionRequest): Promise<Reservation> {
    for (const a of this.admitters) {
      const reservation = await a.admit(request);
      if (reservation) return reservation;
    }
    return freeReservation();
  }

  /** What the admitter that would take the request reports as left, reserving nothing; null when none reports. */
  async standing(request: Omit<AdmissionRequest, 'units'>): Promise<Record<string, unknown> | null> {
    for (const a of this.admitters) {
      const left = (await a.standing?.(request)) ?? null;
      if (left) return left;
    }
    return null;
  }
}
