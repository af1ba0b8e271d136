import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../../core/auth';
import { addressHash } from './address';
import type { UsageEventInput } from './recorder';

export type CallerFields = Pick<
  UsageEventInput,
  'callerKeyId' | 'callerAgentId' | 'callerPersonId' | 'callerUserAgent' | 'callerVerified' | 'callerAddressHash' | 'classification'
>;

/**
 * Who made a priced or verified call, as its usage event records it: the credential's key, agent
 * and person, the user agent, and the hashed address. A keyless (demo) caller is classified with
 * the others; the usage API reclassifies events relative to the viewer when it reads them.
 */
export function callerFields(p: Principal | null, req: IncomingMessage & { ip?: string | undefined }): CallerFields {
  const ua = req.headers['user-agent'];
  return {
    callerKeyId: p?.keyId ?? null,
    callerAgentId: p?.agentId ?? null,
    callerPersonId: p?.personId ?? null,
    callerUserAgent: typeof ua === 'string' ? ua : null,
    callerVerified: p !== null,
    callerAddressHash: addressHash(req.ip ?? 'unknown'),
    classification: p ? 'mine' : 'others',
  };
}
