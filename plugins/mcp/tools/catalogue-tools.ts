import { z } from 'zod';
import type { FunctionRegistry, LatencyStats, CircuitBreakers } from '../../../engine';
import { Catalogue, filterTags } from '../../catalog';
import { functionSortKey } from '../../pricing';
import type { McpTool } from './types';
import { jsonSchema } from './json-schema';

const listInput = z.strictObject({ built_in: z.boolean().optional().describe('true: built-ins only; false: workspace and marketplace functions only.') });
const browseInput = z.strictObject({
  search: z.string().max(100).optional().describe('Matches name, description and tags.'),
  tag: z.string().max(400).optional().describe('A tag, or a comma list of at most 20 tags that must all be on the function (case-insensitive), as GET /api/catalog takes.'),
  limit: z.number().int().min(1).max(100).optional().describe('Entries per page (default 50).'),
  cursor: z.string().max(500).optional().describe('next_cursor of the previous page.'),
});
const functionsOutput = z.looseObject({ functions: z.array(z.looseObject({ id: z.string(), name: z.string(), built_in: z.boolean() })) });
const catalogOutput = z.looseObject({ entries: z.array(z.looseObject({ id: z.string(), name: z.string() })), total: z.number(), has_more: z.boolean(), next_cursor: z.string().nullable() });

/** The same reach, filters, order and entries as GET /api/functions and GET /api/catalog. */
export function catalogueTools(registry: FunctionRegistry, latency: LatencyStats, breakers: CircuitBreakers): McpTool[] {
  const catalogue = new Catalogue(registry, latency, breakers);
  return [
    {
      descriptor: {
        name: 'list_functions',
        title: 'List pricing functions',
        description: 'The pricing functions you can use: built-ins, your own and public marketplace ones (without a key: built-ins and public ones; an unclaimed sandbox: built-ins only, until a person claims it), with cost and latency.',
        inputSchema: jsonSchema(listInput),
        outputSchema: jsonSchema(functionsOutput, 'output'),
        requiresKey: false,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      twin: { keyed: 'functions.list', keyless: 'functions.list' },
      input: listInput,
      run: async (args, ctx) => {
        const a = args as z.output<typeof listInput>;
        const fns = catalogue
          .matching(ctx.principal, { tags: [] })
          .filter((f) => a.built_in === undefined || f.builtIn === a.built_in)
          .sort((x, y) => (functionSortKey(x) < functionSortKey(y) ? -1 : 1));
        return { functions: fns.map((f) => catalogue.view(f, ctx.principal)) };
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
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      twin: { keyed: 'catalog.list', keyless: 'catalog.list' },
      input: browseInput,
      run: async (args, ctx) => {
        const a = args as z.output<typeof browseInput>;
        const matches = catalogue.matching(ctx.principal, { search: a.search, tags: filterTags(a.tag) });
        const page = catalogue.page(matches, ctx.principal, { limit: a.limit ?? 50, cursor: a.cursor });
        return { entries: page.data, total: matches.length, has_more: page.has_more, next_cursor: page.next_cursor };
      },
    },
  ];
}
