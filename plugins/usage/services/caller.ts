import type { IncomingMessage } from 'node:http';
import type { Principal } from '../../../core/auth';
import { addressHash } from '../../../core/address';
import { userAgentOf } from '../../../core/http/header-text';
import { storableText } from '../../../core/storable-text';
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
  const ua = userAgentOf(req);
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

const CONTEXT_KEYS = ['product_type', 'currency', 'category', 'product_id'] as const;

/**
 * What a usage event keeps of a call's context: its identifying strings, each cut to 100 characters
 * and made storable (a character pair cut in half, NUL), so the receipt shows what the row holds;
 * `fixed` wins (a normalised currency).
 */
export function contextKeys(context: Record<string, unknown>, fixed: Record<string, unknown> = {}): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of CONTEXT_KEYS) {
    const v = context[k];
    if (typeof v === 'string') out[k] = storableText(v.slice(0, 100));
  }
  return Object.assign(out, fixed);
}
