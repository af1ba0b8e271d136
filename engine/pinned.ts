import { EngineError } from './errors';
import type { CallerScope, FunctionDescriptor } from './functions';
import type { FunctionRegistry } from './registry';

export interface PinnedRef {
  id?: string | undefined;
  name?: string | undefined;
}

/** Resolves an explicitly named function, with SPEC's refusals for missing, draft and inactive ones. */
export function resolvePinned(registry: FunctionRegistry, ref: PinnedRef, scope: CallerScope): FunctionDescriptor {
  const key = ref.id ?? ref.name ?? '';
  const fn = registry.resolve(key, scope, ref.id ? 'id' : 'name');
  if (!fn) {
    // An id field holding the name of a function the caller reaches: say which id it is (nothing unreachable is named).
    const named = ref.id ? registry.resolve(ref.id, scope, 'name') : undefined;
    if (named) throw new EngineError('function_not_found', `function_id takes a function's id, and "${ref.id}" is the name of ${named.id}.`, { functionId: key, suggestedId: named.id });
    // The other way round: a name field holding the id of a function the caller reaches.
    const byId = ref.id ? undefined : registry.resolve(key, scope, 'id');
    if (byId) throw new EngineError('function_not_found', `function_name takes a function's name, and "${key}" is the id of ${byId.name}.`, { functionId: key, suggestedName: byId.name });
    // A marketplace function is public: naming it to a caller held to built-ins reveals nothing, and says why it cannot run.
    // Its name sent as function_id too: the plan refuses it either way.
    const wide = { ...scope, builtInsOnly: false };
    if (scope.builtInsOnly && (registry.resolve(key, wide, ref.id ? 'id' : 'name') || (ref.id && registry.resolve(key, wide, 'name')))) {
      throw new EngineError('outside_plan', 'Marketplace functions are outside this plan: it prices with built-in functions only.', { functionId: key });
    }
    throw new EngineError('function_not_found', 'No pricing function with this id or name is available to you.', { functionId: key });
  }
  // Within the caller's reach from here on: the call's usage event may name the function it named (`reached`).
  const reached = { id: fn.id, name: fn.name };
  if (fn.status === 'draft') {
    throw new EngineError('function_draft', `Function "${fn.name}" is a draft. Activate it with PATCH /api/functions/${fn.id} {"status":"active"} before routing to it.`, { functionId: fn.id, reached });
  }
  if (fn.status === 'inactive') throw new EngineError('function_inactive', `Function "${fn.name}" was deactivated by its owner.`, { functionId: fn.id, reached });
  if (fn.executionType === 'pipeline') throw new EngineError('pipeline_execution_unavailable', 'Pipeline execution is not available.', { functionId: fn.id, reached });
  return fn;
}
