import { createHash } from 'node:crypto';
import type { KvStore } from '../core/kv';
import type { MarketEvidence, MethodResult } from './builtins/types';

/** JSON with object keys sorted at every depth, so equal contexts give equal cache keys. */
export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableStringify((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Results by function and normalised context, on the key-value store (shared with Redis). */
export class ResultCache {
  constructor(
    private readonly kv: KvStore,
    private readonly ttlMs: number,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  /** A result priced with the network's observations is keyed by them too: new observations give a new key. */
  private key(fnId: string, context: Record<string, unknown>, market?: MarketEvidence): string {
    const hash = createHash('sha256').update(stableStringify(context));
    if (market) hash.update(`\u0000${stableStringify(market)}`);
    return `pcache:${fnId}:${hash.digest('base64url')}`;
  }

  async get(fnId: string, context: Record<string, unknown>, market?: MarketEvidence): Promise<MethodResult | null> {
    if (!this.enabled) return null;
    const raw = await this.kv.get(this.key(fnId, context, market));
    return raw ? (JSON.parse(raw) as MethodResult) : null;
  }

  async set(fnId: string, context: Record<string, unknown>, result: MethodResult, market?: MarketEvidence): Promise<void> {
    if (!this.enabled) return;
    await this.kv.set(this.key(fnId, context, market), JSON.stringify(result), this.ttlMs);
  }
}
