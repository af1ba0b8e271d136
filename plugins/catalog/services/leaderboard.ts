import type { FunctionDescriptor, FunctionRegistry } from '../../../engine';
import type { LeaderboardAggregator, LeaderboardSnapshot } from './aggregate';
import type { PublicationRules, PublishedStats } from './scoring';
import { EMPTY_AGGREGATE, publish, SCORING_DESCRIPTION, SCORING_METHOD_VERSION } from './scoring';

export interface LeaderboardEntry extends PublishedStats {
  rank: number;
  function: {
    id: string;
    name: string;
    label: 'built-in' | 'marketplace';
    built_in: boolean;
    description: string;
    tags: string[];
    cost_per_unit: string;
    cost_multiplier: string;
  };
}

export interface Ranking {
  snapshot: LeaderboardSnapshot | null;
  entries: LeaderboardEntry[];
}

/**
 * Functions on the public leaderboard: built-ins and active public marketplace functions that can run. A pipeline
 * function answers every call 501 here (pipeline_execution_unavailable): ranked on the priors alone, with no call to
 * fail, it would sit among working functions.
 */
export const onLeaderboard = (fn: FunctionDescriptor): boolean => fn.builtIn || (fn.isPublic && fn.status === 'active' && fn.executionType !== 'pipeline');

/**
 * Ranks the public functions with the aggregate in memory. The ranking is kept until the snapshot
 * or the set of listed functions changes, so a request only sorts when something moved.
 */
export class Leaderboard {
  private memo: { snapshot: LeaderboardSnapshot | null; fns: FunctionDescriptor[]; entries: LeaderboardEntry[] } | null = null;

  constructor(
    private readonly registry: FunctionRegistry,
    readonly aggregator: LeaderboardAggregator,
    readonly rules: PublicationRules,
  ) {}

  get methodVersion(): number {
    return SCORING_METHOD_VERSION;
  }

  get description(): string {
    return SCORING_DESCRIPTION;
  }

  async ranking(): Promise<Ranking> {
    const snapshot = await this.aggregator.ready();
    const fns = this.registry.all().filter(onLeaderboard);
    // The registry replaces a descriptor when its function changes (never mutates it), so the same
    // descriptors in the same order mean nothing shown in an entry changed.
    const memo = this.memo;
    if (memo && memo.snapshot === snapshot && memo.fns.length === fns.length && memo.fns.every((f, i) => f === fns[i])) return { snapshot, entries: memo.entries };
    const scored = fns.map((fn) => ({ fn, published: publish(snapshot?.byFunction[fn.id] ?? EMPTY_AGGREGATE, this.rules) }));
    scored.sort((a, b) => b.published.score - a.published.score || (a.fn.name < b.fn.name ? -1 : a.fn.name > b.fn.name ? 1 : 0));
    const entries = scored.map(({ fn, published }, i): LeaderboardEntry => ({
      rank: i + 1,
      function: {
        id: fn.id,
        name: fn.name,
        label: fn.builtIn ? 'built-in' : 'marketplace',
        built_in: fn.builtIn,
        description: fn.description,
        tags: fn.tags,
        cost_per_unit: fn.costPerUnit,
        cost_multiplier: fn.costMultiplier,
      },
      ...published,
    }));
    this.memo = { snapshot, fns, entries };
    return { snapshot, entries };
  }
}
