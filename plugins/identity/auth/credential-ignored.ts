import type { Request } from 'express';
import type { ApiError } from '../../../core/errors';
import { credentialOf } from './authenticators';

/**
 * What a keyless demo route says to a caller that sent a credential anyway: the demo neither checks
 * nor uses it, on its answers and on its refusals alike, or a mistyped key would seem to work and a
 * refusal (budget spent, a function out of the demo's reach) would seem to be the key's.
 */
export function credentialIgnored(said: string): { fields: (req: Request) => { credential_ignored?: string }; refusal: (err: ApiError, req: Request) => ApiError } {
  return {
    fields: (req) => (credentialOf(req) ? { credential_ignored: said } : {}),
    refusal: (err, req) => (credentialOf(req) ? err.with({ fields: { credential_ignored: said } }) : err),
  };
}
