import { randomInt } from 'node:crypto';

export type Rng = () => number;

/** mulberry32: a small seedable generator, so weighted and tie-band choices are reproducible in tests. */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function createRng(seed: number | undefined): Rng {
  return seed === undefined ? () => randomInt(0, 2 ** 32) / 2 ** 32 : seededRng(seed);
}
