import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'; // base58, no 0/O/I/l confusion beyond '0'

/** Unbiased random string over the base58 alphabet (rejection sampling on bytes). */
export function randomToken(length: number): string {
  let out = '';
  const limit = 256 - (256 % ALPHABET.length);
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte >= limit) continue;
      out += ALPHABET[byte % ALPHABET.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** A readable prefixed id such as `ws_4fKq…` (about 105 bits of randomness). */
export function newId(prefix: string): string {
  return `${prefix}_${randomToken(18)}`;
}

export const ID_PATTERN = /^[a-z]{2,8}_[1-9A-HJ-NP-Za-km-z0]{18}$/;
