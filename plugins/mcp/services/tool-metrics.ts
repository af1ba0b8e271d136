import type { Counter, Histogram } from 'prom-client';
import type { Metrics } from '../../../core/metrics';

/**
 * Tool calls over MCP by tool and outcome: a tool's refusals and failures are results (isError) or JSON-RPC errors
 * inside an HTTP 200, so the HTTP metrics cannot tell them from answers. Labels stay bounded: the tools this
 * instance serves (any other name is `unknown`) and the error codes of SPEC's error bodies.
 */
export class ToolMetrics {
  private readonly calls: Counter<'tool' | 'outcome'>;
  private readonly duration: Histogram<'tool'>;
  private readonly tools: ReadonlySet<string>;

  constructor(metrics: Metrics, tools: readonly string[]) {
    this.tools = new Set(tools);
    this.calls = metrics.counter({
      name: 'mcp_tool_calls_total',
      help: 'MCP tool calls by tool and outcome: ok, upstream_timeout (the tool timeout), unknown_tool, or the error code of an isError result.',
      labelNames: ['tool', 'outcome'],
    });
    this.duration = metrics.histogram({
      name: 'mcp_tool_duration_seconds',
      help: 'Time of an MCP tool call, from the tools/call being dispatched to its answer (a timeout counts at MCP_TOOL_TIMEOUT_MS).',
      labelNames: ['tool'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    });
    // Every tool's series exists from the start: an alert on a rate reads 0, not "no data", before the first call.
    for (const tool of tools) {
      this.calls.inc({ tool, outcome: 'ok' }, 0);
      this.duration.zero({ tool });
    }
  }

  record(tool: string, outcome: string, seconds: number): void {
    const label = this.tools.has(tool) ? tool : 'unknown';
    this.calls.inc({ tool: label, outcome });
    if (label !== 'unknown') this.duration.observe({ tool: label }, seconds);
  }
}
