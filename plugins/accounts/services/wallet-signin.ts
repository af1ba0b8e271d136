import { createHash } from 'node:crypto';
import { getAddress, isAddress, verifyMessage } from 'viem';
import { createSiweMessage, parseSiweMessage, validateSiweMessage } from 'viem/siwe';
import type { Clock } from '../../../core/clock';
import { ApiError } from '../../../core/errors';
import { signInRefused } from '../../identity';
import { randomToken } from '../../../core/ids';
import type { KvStore } from '../../../core/kv';

const NONCE_TTL_MS = 10 * 60_000;
export const SIWE_STATEMENT = 'Sign in to the Pricing Compute Service. This request costs nothing and sends nothing on chain.';

/**
 * Sign-In with Ethereum (EIP-4361): the service hands out a one-time nonce and the message to
 * sign; the signature is checked locally (ECDSA recovery), nothing touches a chain.
 */
export class WalletSignIn {
  constructor(
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly publicUrl: () => string,
  ) {}

  private domain(): string {
    return new URL(this.publicUrl()).host;
  }

  async challenge(address: string, chainId: number): Promise<{ nonce: string; message: string; expires_at: string }> {
    if (!isAddress(address)) throw new ApiError('validation_error', 'address is not an Ethereum address.', { issues: [{ path: 'address', reason: 'expected a 0x-prefixed 20-byte address' }] });
    const nonce = randomToken(24);
    const issuedAt = new Date(this.clock.now());
    const expirationTime = new Date(this.clock.now() + NONCE_TTL_MS);
    const message = createSiweMessage({
      address: getAddress(address),
      chainId,
      domain: this.domain(),
      nonce,
      uri: this.publicUrl(),
      version: '1',
      statement: SIWE_STATEMENT,
      issuedAt,
      expirationTime,
    });
    // The nonce is bound to the whole message issued: a signed message with any line changed (chain id, URI, expiry,
    // resources) is refused, not only one whose domain, statement or time fail.
    await this.kv.set(`siwe:${nonce}`, issuedRecord(getAddress(address), message), NONCE_TTL_MS);
    return { nonce, message, expires_at: expirationTime.toISOString() };
  }

  /**
   * Returns the checksummed address that signed a valid, unused challenge; else throws what `refuse`
   * makes of the reason (by default the sign-in's 401).
   */
  async verify(message: string, signature: `0x${string}`, refuse: (why: string) => ApiError = signInRefusal): Promise<string> {
    let parsed;
    try {
      parsed = parseSiweMessage(message);
    } catch {
      throw refuse('the message is not a Sign-In with Ethereum message');
    }
    if (!parsed.address || !parsed.nonce) throw refuse('the message lacks an address or nonce');
    if (parsed.statement !== SIWE_STATEMENT) throw refuse('the message does not name this service');
    if (!validateSiweMessage({ message: parsed, domain: this.domain(), time: new Date(this.clock.now()) })) throw refuse('the message is for another site or has expired');
    const expected = await this.kv.get(`siwe:${parsed.nonce}`);
    if (!expected || !expected.startsWith(`${getAddress(parsed.address)}|`)) throw refuse('the nonce is unknown, used or expired');
    if (expected !== issuedRecord(getAddress(parsed.address), message)) throw refuse('the message is not the one issued with this nonce (a line was changed)');
    let valid = false;
    try {
      valid = await verifyMessage({ address: parsed.address, message, signature });
    } catch {
      valid = false;
    }
    if (!valid) throw refuse('the signature does not match the address');
    // One-time: the nonce is consumed only by a valid signature, and only once.
    const fresh = await this.kv.setIfAbsent(`siwe-used:${parsed.nonce}`, '1', NONCE_TTL_MS);
    if (!fresh) throw refuse('the nonce was already used');
    await this.kv.del(`siwe:${parsed.nonce}`);
    return getAddress(parsed.address);
  }
}

/** What is kept with a nonce: the address it was issued to and a digest of the exact message to sign. */
function issuedRecord(address: string, message: string): string {
  return `${address}|${createHash('sha256').update(message).digest('base64url')}`;
}

function signInRefusal(why: string): ApiError {
  return signInRefused(`Wallet sign-in refused: ${why}.`, 'Ask for a new message at POST /api/auth/wallet/nonce and sign it unchanged.');
}
