import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'; // base58, no 0/O/I/l confusion beyond '0'

// Random bytes are drawn from the CSPRNG in blocks: one system call serves many ids.
const POOL_SIZE = 4096;
let pool = randomBytes(POOL_SIZE);
let offset = 0;

function nextByte(): number {
  if (offset >= POOL_SIZE) {
    pool = randomBytes(POOL_SIZE);
    offset = 0;
  }
  return pool[offset++] as number;
}

/** Unbiased random string over the base58 alphabet (rejection sampling on bytes). */
export function randomToken(length: number): string {
  let out = '';
  const limit = 256 - (256 % ALPHABET.length);
  while (out.length < length) {
    const byte = nextByte();
    if (byte >= limit) continue;
    out += ALPHABET[byte % ALPHABET.length];
  }
  return out;
}

/** A readable prefixed id such as `ws_4fKq…` (about 105 bits of randomness). */
export function newId(prefix: string): string {
  return `${prefix}_${randomToken(18)}`;
}

export const ID_PATTERN = /^[a-z]{2,8}_[1-9A-HJ-NP-Za-km-z0]{18}$/;
