/** Records and vocabulary of the identity plugin. */

export type Plan = 'agent_starter' | 'free';
export type WorkspaceStatus = 'active' | 'suspended' | 'rejected' | 'restricted';
export type WorkspaceOrigin = 'agent_self_registration' | 'oauth_registration' | 'person_signup' | 'test_workspace' | 'created';
export type KeyKind = 'sandbox' | 'agent' | 'person' | 'oauth_client';
export type Role = 'owner' | 'admin' | 'member';
export type AuthMethod = 'api_key' | 'access_token' | 'session' | 'person_token';

export const ROLE_RANK: Record<Role, number> = { member: 1, admin: 2, owner: 3 };

export interface WorkspaceRow {
  id: string;
  name: string;
  plan: Plan;
  origin: WorkspaceOrigin;
  status: WorkspaceStatus;
  is_sandbox: boolean;
  is_test: boolean;
  created_by_agent: boolean;
  former_sandbox: boolean;
  parent_id: string | null;
  test_workspace_id: string | null;
  claimed_at: Date | null;
  created_at: Date;
}

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  key_hash: string;
  display_prefix: string;
  last4: string;
  name: string;
  kind: KeyKind;
  scopes: string[] | null;
  legacy: boolean;
  created_by_person_id: string | null;
  agent_id: string | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  revoked_reason: string | null;
  last_used_at: Date | null;
  rotated_from_id: string | null;
  created_at: Date;
}

export interface AgentRow {
  id: string;
  workspace_id: string;
  name: string;
  status: 'active' | 'disabled';
  created_by_person_id: string | null;
  created_at: Date;
}

/**
 * What the identity plugin puts in `principal.attributes`. Read it with `identityOf(principal)`.
 */
export interface IdentityAttributes {
  authMethod: AuthMethod;
  plan: Plan;
  workspaceName: string;
  workspaceStatus: WorkspaceStatus;
  /** An unclaimed agent sandbox (Agent Starter). */
  sandbox: boolean;
  isTest: boolean;
  origin: WorkspaceOrigin;
  createdByAgent: boolean;
  formerSandbox: boolean;
  claimedAt: string | null;
  /** The workspace a test workspace belongs to, or a claimed agent workspace moved under; null otherwise. */
  parentWorkspaceId: string | null;
  /** Scopes exactly as named on the key (before legacy expansion); null when none were named. */
  namedScopes: readonly string[] | null;
  legacy: boolean;
  keyKind?: KeyKind;
  keyName?: string;
  keyExpiresAt?: string | null;
  creatorPersonId?: string | null;
  /** For a key (and tokens made from it): its creator's account status; a suspended or rejected creator's keys only read. */
  creatorStatus?: WorkspaceStatus;
  /** For a key (and tokens made from it): its creator's role in the workspace when the key was read (see CachedKey). */
  creatorRole?: Role | null;
  /** For access tokens: the key the token was minted from. */
  tokenOfKeyId?: string;
  tokenExpiresAt?: string;
  /** For persons: their role in the workspace. */
  role?: Role;
  agentName?: string;
  /** User-Agent sent with the request (recorded on usage as unverified for Others). */
  email?: string;
}
