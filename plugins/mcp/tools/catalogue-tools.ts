import { z } from 'zod';
import type { Principal } from '../../../core/auth';
import type { FunctionRegistry, LatencyStats, CircuitBreakers } from '../../../engine';
import { isReachable } from '../../../engine';
import { identityOf } from '../../identity';
import { DEMO_WORKSPACE_ID, functionView } from '../../pricing';
import type { McpTool } from './types';
import { jsonSchema } from './json-schema';

const listInput = z.strictObject({ built_in: z.boolean().optional().describe('true: built-ins only; false: workspace and marketplace functions only.') });
const browseInput = z.strictObject({
  search: z.string().max(100).optional().describe('Matches name, description and tags.'),
  tag: z.string().max(40).optional(),
  limit: z.number().int().min(1).max(100).optional(),
});
const functionsOutput = z.looseObject({ functions: z.array(z.looseObject({ id: z.string(), name: z.string(), built_in: z.boolean() })) });
const catalogOutput = z.looseObject({ entries: z.array(z.looseObject({ id: z.string(), name: z.string() })), total: z.number() });

function scopeOf(p: Principal | null) {
  return p ? { workspaceId: p.workspaceId, builtInsOnly: identityOf(p).sandbox } : { workspaceId: DEMO_WORKSPACE_ID, builtInsOnly: false };
}

/** Without a key the catalogue shows built-ins and public marketplace functions. */
function reachable(registry: FunctionRegistry, p: Principal | null) {
  return registry.all().filter((f) => (p ? isReachable(f, scopeOf(p)) : f.builtIn || (f.isPublic && f.status === 'active')));
}

export function catalogueTools(registry: FunctionRegistry, latency: LatencyStats, breakers: CircuitBreakers): McpTool[] {
  const stats = { latency, breakers };
  return [
    {
      descriptor: {
        name: 'list_functions',
        title: 'List pricing functions',
        description: 'The pricing functions you can use: built-ins, your own and public marketplace ones (without a key: built-ins and public ones), with cost and latency.',
        inputSchema: jsonSchema(listInput),
        outputSchema: jsonSchema(functionsOutput, 'output'),
        requiresKey: false,
      },
      input: listInput,
      run: async (args, ctx) => {
        const a = args as z.output<typeof listInput>;
        const fns = reachable(registry, ctx.principal)
          .filter((f) => (a.built_in === undefined ? true : f.builtIn === a.built_in))
          .sort((x, y) => Number(y.builtIn) - Number(x.builtIn) || x.name.localeCompare(y.name));
        return { functions: fns.map((f) => functionView(f, stats, ctx.principal?.workspaceId ?? '')) };
      },
    },
    {
      descriptor: {
        name: 'browse_catalog',
        title: 'Browse the function catalogue',
        description: 'Search the catalogue by text and tag: name, description, tags, cost per unit, cost multiplier, average latency ("no data" when never timed); built-ins are labelled built-in.',
        inputSchema: jsonSchema(browseInput),
        outputSchema: jsonSchema(catalogOutput, 'output'),
        requiresKey: false,
      },
      input: browseInput,
      run: async (args, ctx) => {
        const a = args as z.output<typeof browseInput>;
        const q = a.search?.toLowerCase();
        const all = reachable(registry, ctx.principal).filter(
          (f) => (!q || `${f.name} ${f.description} ${f.tags.join(' ')}`.toLowerCase().includes(q)) && (!a.tag || f.tags.map((t) => t.toLowerCase()).includes(a.tag.toLowerCase())),
        );
        const entries = all.slice(0, a.limit ?? 50).map((f) => {
          const v = functionView(f, stats, ctx.principal?.workspaceId ?? '');
          return { id: v.id, name: v.name, label: v.label, built_in: v.built_in, description: v.description, tags: v.tags, cost_per_unit: v.cost_per_unit, cost_multiplier: v.cost_multiplier, average_latency_ms: v.average_latency_ms };
        });
        return { entries, total: all.length };
      },
    },
  ];
}
