import type { Request } from 'express';
import type { ApiError } from '../../../core/errors';
import { credentialOf } from './authenticators';

/**
 * What a keyless demo route says to a caller that sent a credential anyway: the demo neither checks
 * nor uses it, on its answers and on its refusals alike, or a mistyped key would seem to work and a
 * refusal (budget spent, a function out of the demo's reach) would seem to be the key's.
 */
export function credentialIgnored(said: string, keyed?: { method: string; path: string }): { fields: (req: Request) => { credential_ignored?: string }; refusal: (err: ApiError, req: Request) => ApiError } {
  return {
    fields: (req) => (credentialOf(req) ? { credential_ignored: said } : {}),
    refusal: (err, req) => {
      if (!credentialOf(req)) return err;
      // A caller with a credential of its own is offered the route that takes it, not a sandbox registration.
      if (!keyed || !err.extras.next?.some((n) => n.action === 'register_agent')) return err.with({ fields: { credential_ignored: said } });
      const instead = `Send the same body with your credential to ${keyed.method} ${keyed.path}: it is checked there, and the call counts as your workspace's.`;
      // The hint offered the same registration: it says what next says instead (keeping how long the demo's wait is).
      const wait = err.extras.retry_after !== undefined ? ` Or wait ${err.extras.retry_after} s for the demo.` : '';
      return err.with({ next: [{ action: 'use_your_credential', method: keyed.method, path: keyed.path, description: instead }], hint: `${instead}${wait}`, fields: { credential_ignored: said } });
    },
  };
}
