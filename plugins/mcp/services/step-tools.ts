import type { RouteTable } from '../../../core/http/pipeline';
import type { McpTool } from '../tools/types';

type StepTools = Record<'keyed' | 'keyless', Map<string, string>>;
/** Per tool list, "METHOD /path" of each tool's REST twin → the tool's name: made once, on the first result (routes are all registered by then). */
const madeFor = new WeakMap<readonly McpTool[], StepTools>();
function stepToolsOf(tools: readonly McpTool[], routes: RouteTable): StepTools {
  let made = madeFor.get(tools);
  if (!made) {
    made = { keyed: new Map(), keyless: new Map() };
    for (const t of tools) {
      for (const kind of ['keyed', 'keyless'] as const) {
        const route = t.twin ? routes.find(t.twin[kind]) : undefined;
        if (route) made[kind].set(`${route.method.toUpperCase()} ${route.path}`, t.descriptor.name);
      }
    }
    madeFor.set(tools, made);
  }
  return made;
}

const isStep = (v: unknown): v is { method: string; path: string } =>
  typeof v === 'object' && v !== null && typeof (v as { method?: unknown }).method === 'string' && typeof (v as { path?: unknown }).path === 'string';

/**
 * A tool result with `tool` beside each next step (`next_actions` of a priced result, `next` of a refusal) that an MCP
 * tool does for this caller: the REST route its `twin` names for a caller with or without a credential. An MCP client
 * can then call the tool, with the step's example or body as arguments, rather than leave MCP for REST. Steps are
 * copied, not changed: a result may be an idempotent replay's stored answer. Hints stay in REST's words.
 */
export function withStepTools(body: Record<string, unknown>, tools: readonly McpTool[], routes: RouteTable, keyed: boolean): Record<string, unknown> {
  const served = stepToolsOf(tools, routes)[keyed ? 'keyed' : 'keyless'];
  const tagged = (steps: unknown): unknown =>
    Array.isArray(steps)
      ? steps.map((step: unknown) => {
          if (!isStep(step)) return step;
          const tool = served.get(`${step.method.toUpperCase()} ${step.path.split('?')[0] ?? ''}`);
          return tool ? { ...step, tool } : step;
        })
      : steps;
  const out = { ...body };
  if ('next_actions' in out) out.next_actions = tagged(out.next_actions);
  if ('next' in out) out.next = tagged(out.next);
  return out;
}
