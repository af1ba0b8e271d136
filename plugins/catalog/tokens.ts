export const CATALOG = {
  /** Catalogue: browse and read function entries as a caller sees them. */
  Catalogue: Symbol('catalog.Catalogue'),
  /** Leaderboard: the ranking over the aggregate in memory. */
  Leaderboard: Symbol('catalog.Leaderboard'),
  /** LeaderboardAggregator: the background aggregate; `refresh()` recomputes it now. */
  Aggregator: Symbol('catalog.LeaderboardAggregator'),
} as const;
