import { z } from 'zod';
import { shownName } from '../../core/shown-name';
import { listQuery } from '../../core/pagination';

/** A calendar date that exists: 2000-02-30 parses (as 1 March) but does not round-trip. */
const isRealDate = (s: string): boolean => {
  const t = Date.parse(`${s}T00:00:00Z`);
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === s;
};
// Nobody signing up was born before 1900; an earlier year is a typo (and year 0000 is no date PostgreSQL stores).
const EARLIEST_BIRTH_YEAR = 1900;
const dateOfBirth = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, 'use YYYY-MM-DD')
  .refine(isRealDate, 'not a real date')
  .refine((s) => Number(s.slice(0, 4)) >= EARLIEST_BIRTH_YEAR, `not a plausible date of birth: the year must be ${EARLIEST_BIRTH_YEAR} or later`)
  // A day ahead is still today somewhere: a later date is a typo, not an age to refuse (403 is for the under-aged).
  .refine((s) => !(Date.parse(`${s}T00:00:00Z`) > Date.now() + 86_400_000), 'not a date of birth: it is in the future');
const password = z
  .string()
  .min(10, 'use at least 10 characters')
  .max(200)
  .refine((p) => p.trim().length > 0, 'must not be only spaces: use at least 10 characters that are not all blank');
const email = z.string().trim().toLowerCase().email().max(254);
const hexSignature = z.string().regex(/^0x[0-9a-fA-F]+$/, 'a 0x-prefixed hex signature') as unknown as z.ZodType<`0x${string}`>;

export const signupBody = z.strictObject({
  email,
  password,
  display_name: shownName(1, 80).optional(),
  date_of_birth: dateOfBirth.describe('Accounts are for people aged 18 or over.'),
  workspace_name: shownName(1, 80).optional(),
});
export const signupExample = { email: 'ada@example.com', password: 'correct horse battery', display_name: 'Ada', date_of_birth: '1990-12-10' };

export const signinBody = z.strictObject({ email, password: z.string().min(1).max(200) });
export const signinExample = { email: 'ada@example.com', password: 'correct horse battery' };

export const walletNonceBody = z.strictObject({ address: z.string().min(42).max(42), chain_id: z.number().int().positive().optional() });
export const walletNonceExample = { address: '0x0000000000000000000000000000000000000001', chain_id: 8453 };

export const walletSigninBody = z.strictObject({
  message: z.string().min(20).max(4000),
  signature: hexSignature,
  date_of_birth: dateOfBirth.optional().describe('Needed the first time a wallet signs in (a new account).'),
});
// The example is returned with validation errors as "a body that passes", so its signature has the shape of one (65 bytes).
const exampleSignature = `0x${'5f'.repeat(64)}1b`;
export const walletSigninExample = { message: '<the message from POST /api/auth/wallet/nonce>', signature: exampleSignature };

export const walletLinkBody = z.strictObject({ message: z.string().min(20).max(4000), signature: hexSignature });
export const walletLinkExample = { message: '<the message from POST /api/auth/wallet/nonce>', signature: exampleSignature };

export const uuidParam = z.object({ sessionId: z.string() });
// A repeated currentSessionId arrives as an array; taken here so the route answers it, as any
// value that is not one UUID, with SPEC's "Invalid session ID format".
export const revokeAllQuery = z.object({ currentSessionId: z.union([z.string(), z.array(z.string())]).optional().describe('One session id (a UUID) to keep.') });
// The same field in a JSON body, for clients that send it there: any value that is not one UUID is
// refused with the same sentence, so it is taken as sent (documented as the string it must be).
export const revokeAllBody = z.strictObject({ currentSessionId: z.unknown().optional().meta({ type: 'string', format: 'uuid', description: 'One session id (a UUID) to keep; the same as the query parameter.' }) });
export const revokeAllExample = { currentSessionId: '5cd376a0-3f0e-4c38-9d2b-6a3f4e1b2c7d' };

export const createKeyBody = z.strictObject({
  name: shownName(1, 80),
  scopes: z.array(z.string().min(1).max(64)).max(20).optional().describe('Named scopes; omit or [] for full access (except permissions granted by name only).'),
  agent_id: z.string().min(3).max(64).optional(),
  expires_at: z.string().datetime().optional(),
});
export const createKeyExample = { name: 'checkout service', scopes: ['price:compute'] };

export const keyIdParams = z.object({ keyId: z.string().min(3).max(64) });
export const agentIdParams = z.object({ id: z.string().min(3).max(64) });

export const createAgentBody = z.strictObject({ name: shownName(2, 80) });
export const createAgentExample = { name: 'pricing-agent/returns' };
export const updateAgentBody = z.strictObject({ name: shownName(2, 80).optional(), status: z.enum(['active', 'disabled']).optional() });
export const updateAgentExample = { status: 'disabled' };

export const agentKeyBody = z.strictObject({
  name: shownName(1, 80).optional(),
  scopes: z.array(z.string().min(1).max(64)).max(20).optional(),
  expires_at: z.string().datetime().optional(),
});
export const agentKeyExample = { name: 'returns agent key', scopes: ['price:compute'] };

/** GET /api/user/sessions: paged like every list (limit 1 to 100, default 20; cursor from next_cursor). */
export const sessionListQuery = z.object({ ...listQuery });

/** POST /api/user/tokens: a narrower person token. */
export const personTokenBody = z.strictObject({
  scopes: z.array(z.string().min(1).max(64)).min(1).max(20).describe('The named scopes the token carries (legacy read, write and admin expand); at most those of the credential asking.'),
});
export const personTokenExample = { scopes: ['price:compute'] };
