export const PRICING = {
  Engine: Symbol('pricing.Engine'),
  Registry: Symbol('pricing.FunctionRegistry'),
  Latency: Symbol('pricing.LatencyStats'),
  Breakers: Symbol('pricing.CircuitBreakers'),
  Pool: Symbol('pricing.PricingPool'),
  Compute: Symbol('pricing.ComputeService'),
  Outbound: Symbol('pricing.SafeHttpClient'),
  DemoBudget: Symbol('pricing.DemoBudgetGuard'),
  MarketEvidence: Symbol('pricing.MarketEvidenceSlot'),
  Schemas: Symbol('pricing.CallSchemas'),
} as const;
