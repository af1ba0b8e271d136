/**
 * Scope vocabulary and the rules of SPEC's "Scopes" and "Permissions granted by name only".
 */
export const NAMED_SCOPES = [
  'price:compute',
  'workspace:claim',
  'team:admin',
  'billing:read',
  'billing:write',
  'commerce:configure',
  'commerce:proposal:approve',
  'commerce:execute',
] as const;
export type Scope = (typeof NAMED_SCOPES)[number];

export const LEGACY_SCOPES = ['read', 'write', 'admin'] as const;
export type LegacyScope = (typeof LEGACY_SCOPES)[number];

/** Effective only when named on the key itself: never from "no scopes", a wildcard, a legacy name or a token. */
export const NAME_ONLY_SCOPES: readonly Scope[] = ['workspace:claim', 'team:admin'];

/** What each legacy choice means in today's scopes (legacy keys never approve commerce proposals). */
const LEGACY_EXPANSION: Record<LegacyScope, readonly Scope[]> = {
  read: ['price:compute', 'billing:read'],
  write: ['price:compute', 'billing:read', 'billing:write', 'commerce:configure', 'commerce:execute'],
  admin: ['price:compute', 'billing:read', 'billing:write', 'commerce:configure', 'commerce:execute'],
};

/** Full access of an unscoped key or a dashboard session: everything except name-only permissions. */
export const FULL_ACCESS: readonly Scope[] = NAMED_SCOPES.filter((s) => !NAME_ONLY_SCOPES.includes(s));

/**
 * What a scoped credential needs on a route that changes workspace configuration no named scope covers
 * (RouteSpec.fullAccess): every ordinary scope except proposal approval, i.e. what a legacy write key holds.
 */
export const CONFIGURATION_ACCESS: readonly Scope[] = LEGACY_EXPANSION.write;

export function isKnownScope(name: string): name is Scope {
  return (NAMED_SCOPES as readonly string[]).includes(name);
}

export function isLegacyScope(name: string): name is LegacyScope {
  return (LEGACY_SCOPES as readonly string[]).includes(name);
}

/** Names that are neither a scope nor a legacy choice; also refuses the wildcard `*`. */
export function unknownScopes(names: readonly string[]): string[] {
  return names.filter((n) => !isKnownScope(n) && !isLegacyScope(n));
}

/**
 * Scopes a key actually grants. `named` null (no scopes) → full access without name-only ones.
 * Legacy names expand; named scopes count as themselves.
 */
export function effectiveScopes(named: readonly string[] | null): Scope[] {
  if (named === null || named.length === 0) return [...FULL_ACCESS];
  const out = new Set<Scope>();
  for (const n of named) {
    if (isKnownScope(n)) out.add(n);
    else if (isLegacyScope(n)) for (const s of LEGACY_EXPANSION[n]) out.add(s);
  }
  return [...out];
}

/** Legacy read keys are read-only for billing and commerce: writes there need a non-legacy grant. */
export function isLegacyReadOnly(named: readonly string[] | null): boolean {
  return named !== null && named.length > 0 && named.every((n) => n === 'read');
}
