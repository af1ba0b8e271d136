import { createHmac } from 'node:crypto';
import type { FunctionDescriptor, RequestSigner } from '../../../engine';

/** Headers of a signed request to a function's endpoint (docs/routing.md, "Signed requests"). */
export const SIGNATURE_HEADER = 'x-pricing-signature';
export const TIMESTAMP_HEADER = 'x-pricing-timestamp';
export const SIGNING_SECRET_PREFIX = 'pcs_fsig_';

/** How a request is signed, as the owner is told with the secret. */
export const SIGNING_SCHEME = {
  timestamp_header: 'X-Pricing-Timestamp',
  signature_header: 'X-Pricing-Signature',
  signature: 'v1=<hex HMAC-SHA256 under signing_secret of "<timestamp>.<the raw request body>">',
  verify: 'Recompute the HMAC over the timestamp header, a dot and the body bytes as received, compare in constant time, and refuse a timestamp more than 5 minutes away from your clock.',
  rotate: 'POST /api/functions/{id}/signing-secret: a new secret, the old one ends at once.',
} as const;

/**
 * Each external function's signing secret, derived from the service's signing key (kept like its other server secrets)
 * and the function's id and signing generation: nothing per function is stored but the generation, a rotation makes a
 * new secret and ends the old one at once, and the secret can be shown to its owner without being kept anywhere.
 */
export class RequestSigning {
  constructor(
    private readonly key: string,
    private readonly now: () => number,
  ) {}

  secretOf(fnId: string, generation: number): string {
    return `${SIGNING_SECRET_PREFIX}${createHmac('sha256', this.key).update(`function-signing:${fnId}:${generation}`).digest('base64url')}`;
  }

  /** The signature of `body` sent at `timestamp` (Unix seconds): hex HMAC-SHA256 under the secret of `${timestamp}.${body}`. */
  static signature(secret: string, timestamp: number, body: Buffer | string): string {
    return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  }

  /**
   * What the owner is shown of an external function's signing secret (on registration, its replay, and a rotation):
   * the secret and how requests are signed with it. Nothing for any other kind of function.
   */
  shown(fn: FunctionDescriptor): { signing_secret?: string; signing?: typeof SIGNING_SCHEME } {
    if (fn.executionType !== 'external_api' || fn.builtIn) return {};
    return { signing_secret: this.secretOf(fn.id, fn.signingGeneration ?? 1), signing: SIGNING_SCHEME };
  }

  /**
   * What a replay of the registration (its Idempotency-Key) shows: the secret only while it is still the one the
   * registration made. A rotation ends a secret that may have leaked; a replay must not hand out its successor, which the
   * rotation's own answer showed.
   */
  shownOnReplay(fn: FunctionDescriptor): { signing_secret?: string; signing?: typeof SIGNING_SCHEME } {
    const shown = this.shown(fn);
    return (fn.signingGeneration ?? 1) > 1 && shown.signing ? { signing: shown.signing } : shown;
  }

  /** The engine's signer: every external function's request carries the timestamp and its signature. */
  readonly signer: RequestSigner = (fn: FunctionDescriptor) => {
    if (fn.executionType !== 'external_api' || fn.builtIn) return undefined;
    const secret = this.secretOf(fn.id, fn.signingGeneration ?? 1);
    return (body: Buffer) => {
      const timestamp = Math.floor(this.now() / 1000);
      return { [TIMESTAMP_HEADER]: String(timestamp), [SIGNATURE_HEADER]: `v1=${RequestSigning.signature(secret, timestamp, body)}` };
    };
  };
}
