import type { Request } from 'express';

export type PrincipalKind = 'api_key' | 'access_token' | 'person' | 'payment' | 'embed_token';
export type Channel = 'api' | 'mcp' | 'demo';

/** Who is calling, as the authenticators established it. */
export interface Principal {
  kind: PrincipalKind;
  workspaceId: string;
  /** Granted scopes; null means full access (keys created with no scopes, dashboard sessions). */
  scopes: readonly string[] | null;
  keyId?: string;
  agentId?: string;
  personId?: string;
  sessionId?: string;
  /** Details owned by the plugin that authenticated the caller (plan, key kind, …). */
  attributes: Readonly<Record<string, unknown>>;
}

/**
 * Turns a request's credential into a principal. Returns null when the request carries no
 * credential of this authenticator's kind; throws a 401 ApiError when it carries one that is
 * rejected.
 */
export interface Authenticator {
  name: string;
  authenticate(req: Request): Promise<Principal | null>;
}
