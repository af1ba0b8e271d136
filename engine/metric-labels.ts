import type { FunctionDescriptor } from './functions';

/** The label shared by the functions past the cap. Function ids start with `fn_` and built-ins have their names: no clash. */
export const OTHER_FUNCTIONS = 'other';

/**
 * The `function` label of the engine's metrics: a built-in's name, any other function's id. The metrics endpoint is
 * read without a credential (by the monitoring scraper), so the names workspaces give their private functions never
 * appear there. Every labelled function adds about 22 series to every scrape, for the life of the process, and anyone
 * who signs up can register functions: only the first `max` functions other than built-ins that this instance runs
 * get their own label (METRICS_MAX_FUNCTION_LABELS), later ones share `other`.
 */
export class FunctionLabels {
  private readonly labelled = new Set<string>();

  constructor(private readonly max: number) {}

  of(fn: Pick<FunctionDescriptor, 'builtIn' | 'id' | 'name'>): string {
    if (fn.builtIn) return fn.name;
    if (this.labelled.has(fn.id)) return fn.id;
    if (this.labelled.size >= this.max) return OTHER_FUNCTIONS;
    this.labelled.add(fn.id);
    return fn.id;
  }
}
