import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { CounterConfiguration, GaugeConfiguration, HistogramConfiguration } from 'prom-client';

/**
 * The Prometheus registry of one service instance, with helpers that return an already registered
 * metric rather than failing when two plugins ask for the same one. Labels are route templates and
 * small enums, never raw paths or ids.
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.httpDuration = this.histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route template, method and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    });
  }

  counter<L extends string>(cfg: Omit<CounterConfiguration<L>, 'registers'>): Counter<L> {
    return (this.registry.getSingleMetric(cfg.name) as Counter<L> | undefined) ?? new Counter<L>({ ...cfg, registers: [this.registry] });
  }

  gauge<L extends string>(cfg: Omit<GaugeConfiguration<L>, 'registers'>): Gauge<L> {
    return (this.registry.getSingleMetric(cfg.name) as Gauge<L> | undefined) ?? new Gauge<L>({ ...cfg, registers: [this.registry] });
  }

  histogram<L extends string>(cfg: Omit<HistogramConfiguration<L>, 'registers'>): Histogram<L> {
    return (this.registry.getSingleMetric(cfg.name) as Histogram<L> | undefined) ?? new Histogram<L>({ ...cfg, registers: [this.registry] });
  }
}
