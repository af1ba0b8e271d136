/** DI tokens of the kernel's own services. Plugins declare theirs in their tokens.ts. */
export const TOKENS = {
  Config: Symbol('Config'),
  Logger: Symbol('Logger'),
  Sequelize: Symbol('Sequelize'),
  /** Sql: typed bound-parameter queries over the Sequelize instance. */
  Sql: Symbol('Sql'),
  /** pg.Pool for hot-path statements that skip Sequelize's per-query work (usage events). */
  PgPool: Symbol('PgPool'),
  Kv: Symbol('KvStore'),
  Metrics: Symbol('Metrics'),
  Clock: Symbol('Clock'),
  Events: Symbol('EventBus'),
  Hooks: Symbol('Hooks'),
  Routes: Symbol('RouteTable'),
  /** ReadonlyMap<string, ReadinessCheck> of every readiness check. */
  Readiness: Symbol('Readiness'),
} as const;
