import { createHash } from 'node:crypto';
import type { KvStore } from '../core/kv';
import { stableStringify } from '../core/stable-json';
import type { MarketEvidence, MethodResult } from './builtins/types';
import type { FunctionDescriptor } from './functions';


/** Results by calling workspace, function version and normalised context, on the key-value store (shared with Redis). */
export class ResultCache {
  constructor(
    private readonly kv: KvStore,
    private readonly ttlMs: number,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  /**
   * Keyed by the whole descriptor, not its id: any edit that can change an answer (endpoint, timeout, status, the name
   * sent to the endpoint; a workspace function's updatedAt moves on every edit) must miss at once, and every instance
   * sees the edit through its registry reload. A result priced with the network's observations is keyed by them too.
   * Each calling workspace has its own entries: a hit on an answer another workspace asked for would tell the caller
   * that someone priced that exact context moments ago (a marketplace function is called by competitors alike).
   */
  private key(workspaceId: string, fn: FunctionDescriptor, context: Record<string, unknown>, market?: MarketEvidence): string {
    const hash = createHash('sha256').update(workspaceId).update('\u0000').update(stableStringify(fn)).update('\u0000').update(stableStringify(context));
    if (market) hash.update(`\u0000${stableStringify(market)}`);
    return `pcache:${fn.id}:${hash.digest('base64url')}`;
  }

  async get(workspaceId: string, fn: FunctionDescriptor, context: Record<string, unknown>, market?: MarketEvidence): Promise<MethodResult | null> {
    if (!this.enabled) return null;
    const raw = await this.kv.get(this.key(workspaceId, fn, context, market));
    return raw ? (JSON.parse(raw) as MethodResult) : null;
  }

  async set(workspaceId: string, fn: FunctionDescriptor, context: Record<string, unknown>, result: MethodResult, market?: MarketEvidence): Promise<void> {
    if (!this.enabled) return;
    await this.kv.set(this.key(workspaceId, fn, context, market), JSON.stringify(result), this.ttlMs);
  }
}
