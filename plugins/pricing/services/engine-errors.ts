import { sandboxRefusal } from '../../identity';
import { ApiError, errorBodySchema } from '../../../core/errors';
import type { ErrorExtras } from '../../../core/errors';
import { BUILTINS, EngineError, NETWORK_OBSERVATIONS_CLAUSE, quotesRefusal } from '../../../engine';
import type { MarketEvidence } from '../../../engine';
import { builtinSpelledAs } from './reserved-names';

const INPUT_MENU = Object.fromEntries(BUILTINS.map((b) => [b.name, b.inputs.filter((i) => i !== 'currency')]));

/**
 * The functions a keyless caller reaches, named: no route lists the built-ins alone without a key (GET /api/functions
 * needs one, and GET /api/catalog lists the marketplace's functions beside them, which the demo does not reach).
 */
const KEYLESS_REACH = BUILTINS.map((b) => `${b.name} (${b.id})`).join(', ');

/** Seconds a caller is asked to wait when every pricing worker was busy: long enough for the queue to drain. */
const BUSY_RETRY_AFTER_S = 1;

/**
 * 501 to running a pipeline. A keyless caller is pointed only at what it can open without a key: GET
 * /api/pipelines answers it 401.
 */
export function pipelineUnavailable(keyless = false): ApiError {
  return new ApiError('pipeline_execution_unavailable', 'Pipeline execution is not available.', {
    hint: keyless
      ? 'With a key, reference pipelines and their stages can be listed (GET /api/pipelines, GET /api/pipelines/stages). Without one, POST /api/public/compute/demo prices with the built-in functions the stages are (GET /api/catalog lists them).'
      : 'Reference pipelines and their stages can be listed (GET /api/pipelines, GET /api/pipelines/stages); price with the stages one at a time through POST /api/price-router, with a stage\'s name as function_name.',
  });
}

/** The OpenAPI 403 of a route where an unclaimed sandbox may name a marketplace function (compute, router, a function's read). */
export const marketplaceOutsidePlan = {
  description: 'plan_restricted: an unclaimed sandbox named a marketplace function (public and active); sandboxes use the built-in functions until a person claims them (next: claim).',
  schema: errorBodySchema,
};

/** Who asked and how, so hints name only what this caller can do and the field it sent. */
export interface ErrorAudience {
  /** No credential (the demo): hints name only what opens without one (GET /api/catalog, not GET /api/functions). */
  keyless?: boolean;
  /** An unclaimed sandbox: it prices with built-ins only. */
  sandbox?: boolean;
  /** False where nobody can claim a sandbox (claimOffered: no accounts): its refusal offers no claim. */
  claimOffered?: boolean;
  /** The field the request named its function in (the price router takes function_name too). */
  pinnedBy?: 'function_id' | 'function_name';
  /** The context the call sent: an example made of it prices what the caller meant. */
  context?: Record<string, unknown>;
  /** The network's observations for that context, which decide whether competitive-position can price it. */
  market?: MarketEvidence | null;
  /** Whether the caller's workspace has a default routing policy (false: a hint must not speak of "your routing policy"). */
  hasPolicy?: boolean;
  /** False when this service does not take price observations (the verification plugin is off): no answer offers them. */
  observationsServed?: boolean;
  /**
   * Whether the credential may change the workspace's routing policies. `ask_manager`: it acts for someone who may not (an
   * agent's key or token, a member's key), so a hint asks those who may; `needs_full_access`: it acts for an owner or admin
   * but was narrowed (a scoped key, a narrowed person token), so a hint names the credential that may. Either way, never a
   * change this caller would be refused.
   */
  policyAccess?: 'manages' | 'ask_manager' | 'needs_full_access';
}

/** Who may change routing policies for an owner or admin (policies.create takes full access). */
const FULL_ACCESS_CREDENTIAL = 'your session, or a key created with no scopes';

/** The built-ins in the order the default strategy reaches for them (docs/routing.md). */
const DEFAULT_ORDER = ['anchored-adjustment', 'competitive-position', 'elasticity-optimum', 'cost-plus', 'charm-pricing'].flatMap((name) => BUILTINS.filter((b) => b.name === name));

/**
 * What the caller can do about functions that failed, in the words of what it has: a policy, none, or no policy at all to
 * make; or, for a credential that may not change policies, who can. `failed`: the functions that failed in this call, which
 * a suggested fallback is not.
 */
function fallbackAdvice(opts: ErrorAudience, failed: ReadonlySet<string> = new Set()): string {
  if (opts.keyless || opts.sandbox) return 'pin another built-in with function_id';
  if (opts.policyAccess === 'needs_full_access') {
    return `${opts.hasPolicy === false ? 'create a default routing policy with a fallback' : 'add a fallback_chain or fallback_function to your routing policy'} with a credential of full access (${FULL_ACCESS_CREDENTIAL}; this one was narrowed by its scopes)`;
  }
  if (opts.policyAccess === 'ask_manager') {
    return opts.hasPolicy === false
      ? "ask an owner or admin of the workspace for a default routing policy with a fallback (this credential may not create one)"
      : "ask an owner or admin of the workspace to add a fallback_chain or fallback_function to its routing policy (this credential may not change it)";
  }
  if (opts.hasPolicy === false) {
    // A fallback that could price this very context (the caller's inputs, the network's observations), never one that just failed.
    const fallback = DEFAULT_ORDER.find((b) => !failed.has(b.id) && (opts.context === undefined || b.mayPrice(opts.context, opts.market ?? undefined)));
    return fallback
      ? `create a default routing policy with a fallback (POST /api/routing-policies {"name": "with a fallback", "strategy": "default", "is_default": true, "fallback_function": "${fallback.name}"}, a built-in that can price this context)`
      : 'create a default routing policy whose fallback_function can price this context (POST /api/routing-policies with "name", "strategy": "default", "is_default": true and "fallback_function"; GET /api/functions lists what each function reads)';
  }
  return 'add a fallback_chain or fallback_function to your routing policy';
}

/** An explicit call's example: the caller's context pinned to the first built-in that can price it, else the stock one. */
function explicitExample(context: Record<string, unknown> | undefined, market: MarketEvidence | null | undefined): Record<string, unknown> {
  const pin = context ? DEFAULT_ORDER.find((b) => b.mayPrice(context, market ?? undefined)) : undefined;
  return pin && context ? { context, function_id: pin.id, routing_preference: 'explicit' } : { context: { current_price: 10 }, function_id: 'fn_builtin_anchored', routing_preference: 'explicit' };
}

/** The functions that failed among a call's attempts, or were kept out by their breakers (their calls kept failing). */
const failedIn = (attempts: ReadonlyArray<{ id?: string | null; outcome: string; error?: string | undefined }> | undefined): Set<string> =>
  new Set((attempts ?? []).flatMap((a) => ((a.outcome === 'failed' || (a.outcome === 'skipped' && a.error === 'breaker open')) && a.id ? [a.id] : [])));

const capitalized = (text: string): string => `${text.charAt(0).toUpperCase()}${text.slice(1)}`;

/** What a call whose candidates were all excluded carries, 422 or 502 alike: the strategy, the policy, the rule and each candidate. */
function exclusionFields(d: EngineError['details']): Record<string, unknown> {
  return { strategy: d.strategy, ...(d.policyId ? { policy_id: d.policyId } : {}), ...(d.rule ? { rule: d.rule } : {}), candidates: d.candidates ?? [], ...(d.attempts ? { attempts: d.attempts } : {}) };
}

/**
 * What would let a candidate through, by the reasons actually given (under a policy, those of the function its rules
 * send this context to: another's ceiling is no lever), as the PATCH of the policy that routed the call.
 */
function loosenAdvice(d: EngineError['details'], opts: ErrorAudience): string {
  const reasons = new Set((d.decisive ?? d.candidates ?? []).flatMap((c) => [c.reason, ...(c.also ?? []).map((a) => a.reason)]));
  const levers = [
    reasons.has('cost ceiling') ? 'raise max_cost_per_unit' : null,
    reasons.has('latency ceiling') ? 'raise max_latency_ms' : null,
    // A rule that matched sends the context to its function whatever else holds: only letting that function through helps.
    (d.strategy === 'policy' || reasons.has('rule miss')) && !d.ruleMatched ? 'add a rule or a default_function for this context' : null,
    reasons.has('no weight') ? 'give the functions a weight' : null,
    reasons.has('unreachable') || reasons.has('not active') ? 'replace the functions out of reach or not active (a marketplace function its owner withdrew, say)' : null,
    // Active and within reach: activating or waiting changes nothing until pipelines run, only another function helps.
    reasons.has('pipeline unavailable') ? 'replace the pipeline functions, which cannot run yet (pipeline execution is not available), with external_api or built-in ones' : null,
  ].filter((l): l is string => l !== null);
  // A fallback is held to the ceilings too: where they alone shut every candidate out, only one within them helps.
  const ceilingsOnly = reasons.size > 0 && [...reasons].every((r) => r === 'cost ceiling' || r === 'latency ceiling');
  // Offered while the policy has none: a fallback chain whose entries were all skipped still leaves that lever.
  const hasFallbackFunction = (d.attempts ?? []).some((a) => a.role === 'fallback_function');
  const fallbacks = hasFallbackFunction
    ? ''
    : `; or set a fallback_function${ceilingsOnly ? ' within the ceilings (fallbacks are held to them too)' : ''}${d.attempts?.length ? '' : ': the fallbacks are tried when every candidate is excluded'}`;
  // What names the candidates is the saved policy's own strategy (a routing_preference keeps them): config.candidates is
  // read by cheapest, fastest and round_robin only. A rule that matched sends the context to its function whatever else.
  const moreCandidates = d.ruleMatched
    ? 'point the matched rule at another function'
    : (({ priority: 'add functions to config.order', weighted: 'give more functions a weight in config.weights', policy: 'add a rule or a default_function' } as Record<string, string>)[d.policyStrategy ?? d.strategy ?? ''] ?? 'add candidates');
  return d.policyId
    ? `PATCH /api/routing-policies/${d.policyId}: ${levers.length ? levers.join(', ') : moreCandidates}${fallbacks}`
    : `choose another routing_preference, or pin a function with ${opts.pinnedBy ?? 'function_id'}`;
}

/**
 * inputs_by_function: what each built-in this call considered reads (tried, skipped, or left out by the policy while it
 * could have priced the context); none for a call that considered no built-in (a pinned workspace function).
 */
function inputsOf(d: EngineError['details']): { inputs_by_function?: Record<string, string[]> } {
  const considered = new Set([...(d.attempts ?? []).map((a) => a.function), ...(d.excludedCouldPrice ?? []).map((c) => c.function)]);
  const menu = Object.entries(INPUT_MENU).filter(([name]) => considered.has(name));
  return menu.length ? { inputs_by_function: Object.fromEntries(menu) } : {};
}

/**
 * The hint of a 422 where an endpoint refused the context as a whole (HTTP 400, 404, 413, 422) and no input is missing:
 * there is no value to name, only the endpoint's answer, which the message quotes where it gave a reason.
 */
function endpointRefusedHint(endpoints: string[], attempts: ReadonlyArray<{ function: string; outcome: string; error?: string | undefined }>, opts: ErrorAudience): string {
  const many = endpoints.length > 1;
  const others = attempts.some((a) => a.outcome === 'not_applicable' && !endpoints.includes(a.function));
  const refusals = attempts.filter((a) => a.outcome === 'not_applicable' && endpoints.includes(a.function));
  const quoted = refusals.filter((a) => quotesRefusal(a.error)).length;
  // Said only of what the message holds: an endpoint that answered its status alone (an empty body, an error page) gave none.
  const quotes =
    quoted === refusals.length
      ? `and the message quotes ${many ? 'their answers' : 'its answer'}`
      : quoted === 0
        ? `without a reason the message could quote (${many ? 'their answers gave' : 'its answer gave'} none as text or as an error, message or detail field)`
        : 'and the message quotes the answers that gave a reason'
  const way = opts.pinnedBy
    ? `Send a context that endpoint prices (its owner says what it reads), or omit ${opts.pinnedBy} to let routing choose a function that prices what you sent.`
    : `Send a context ${many ? 'these endpoints price' : 'that endpoint prices'} (${many ? 'their owners say' : 'its owner says'} what ${many ? 'they read' : 'it reads'}), or name another function with function_id.`;
  return `No input is missing: the endpoint of ${endpoints.join(', ')} refused this context as sent, ${quotes}${others ? " beside each other function's reason" : ''}. ${way}`;
}

/**
 * The hint of a 422 where no input is missing and the functions tried would not price values as sent (an endpoint
 * answering in another currency): a pinned call already named its function, so it is offered routing instead.
 */
function declinedHint(inputs: readonly string[], attempts: ReadonlyArray<{ role: string; outcome: string }>, opts: ErrorAudience): string {
  const values = inputs.join(' and ');
  // A pinned call runs its policy's fallbacks too: what they would not price is named with them, not as the pin's alone.
  const fallbacks = attempts.some((a) => a.role !== 'chosen' && a.outcome === 'not_applicable');
  return opts.pinnedBy
    ? `No input is missing: the function you named with ${opts.pinnedBy}${fallbacks ? " and your policy's fallbacks" : ''} would not price ${values} as sent (issues give why, attempts ${fallbacks ? "each function's" : 'its'} reason). Send a value ${fallbacks ? 'they price' : 'it prices'}, or omit ${opts.pinnedBy} to let routing choose a function that prices what you sent.`
    : `No input is missing: the functions tried would not price ${values} as sent (issues give why, attempts each function's reason). Send a value they price, or name a function that prices this one with function_id.`;
}

/**
 * Who can mend addresses the outbound guard refuses, and how: the caller, by the PATCH of each of its own functions
 * (named by id); another workspace's owner, told apart by no id (the PATCH is not the caller's to send).
 */
function refusedAddressAdvice(refusedAt: readonly string[], own: readonly string[]): string {
  const many = refusedAt.length > 1;
  const rule = `The outbound guard refuses the address${many ? 'es' : ''} ${many ? 'these functions are' : 'the function is'} registered with (private, loopback, link-local or metadata, or a port or scheme the operator does not allow)`;
  const others = refusedAt.length - own.length;
  const patches = own.map((id) => `PATCH /api/functions/${id}`).join(' and ');
  const mine = own.length ? `; ${own.length > 1 ? 'they are yours' : 'it is yours'}: ${own.length > 1 ? "each attempt's error says why" : "the attempt's error says why"}, and ${patches} with a public https endpoint_url ({"endpoint_url": "https://…"}) mends ${own.length > 1 ? 'each' : 'it'}` : '';
  const theirs = others > 0 ? `; ${own.length ? `the owner${others > 1 ? 's' : ''} of the other${others > 1 ? 's' : ''}` : `${many ? 'their owners see' : 'its owner sees'} which in the attempt's error and`} can register a public https endpoint_url${own.length ? ' the same way' : ''}` : '';
  return `${rule}${mine}${theirs}`;
}

/** The engine's typed outcomes as SPEC's error bodies, with hints for `opts`'s caller. */
export function toApiError(err: unknown, opts: ErrorAudience = {}): unknown {
  const mapped = engineErrorBody(err, opts);
  return opts.observationsServed === false && mapped instanceof ApiError ? withoutObservations(mapped) : mapped;
}

/** The hint's mention of the network's observations as a way to a price. */
const OBSERVATIONS_HINT = ', and so does a product_type the network holds price observations of';

/** Every mention of the network's observations as a way to a price taken out: message, hint and each attempt's reason. */
function withoutObservations(e: ApiError): ApiError {
  const strip = (v: unknown): unknown =>
    typeof v === 'string'
      ? v.split(NETWORK_OBSERVATIONS_CLAUSE).join('').split(OBSERVATIONS_HINT).join('')
      : Array.isArray(v)
        ? v.map(strip)
        : v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, strip(x)]))
          : v;
  return new ApiError(e.code, strip(e.message) as string, strip(e.extras) as ErrorExtras);
}

function engineErrorBody(err: unknown, opts: ErrorAudience): unknown {
  if (!(err instanceof EngineError)) return err;
  const d = err.details;
  switch (err.code) {
    case 'function_not_found': {
      if (d.suggestedId) {
        return new ApiError('function_not_found', err.message, {
          hint: `Send "function_id": "${d.suggestedId}"; a name goes in function_name, which POST /api/price-router accepts.`,
          fields: { suggested_function_id: d.suggestedId },
        });
      }
      if (d.suggestedName) {
        return new ApiError('function_not_found', err.message, {
          hint: `Send "function_name": "${d.suggestedName}", or the id as function_id.`,
          fields: { suggested_function_name: d.suggestedName },
        });
      }
      // Identical for a missing function and one out of reach, so existence does not leak (a built-in spelled another way
      // is suggested from the reference alone).
      const where = opts.keyless
        ? `Without a key the demo reaches the built-in functions only: ${KEYLESS_REACH}. Marketplace functions need the key of a claimed workspace: a person signs up (POST /api/auth/signup) and creates one, or claims a sandbox made with POST /api/agents/register (sandboxes price with built-ins only until claimed).`
        : opts.sandbox
          ? 'A sandbox prices with built-in functions only until a person claims it; GET /api/functions?built_in=true lists them.'
          : 'GET /api/functions lists the functions you can use: built-ins, your own, and public marketplace functions. A marketplace function its owner withdrew (deactivated or made private) answers this too.';
      const like = d.functionId ? builtinSpelledAs(d.functionId) : undefined;
      if (!like) return new ApiError('function_not_found', 'No pricing function with this id or name is available to you.', { hint: where });
      const [field, value] = opts.pinnedBy === 'function_name' ? (['function_name', like.name] as const) : (['function_id', like.id] as const);
      return new ApiError('function_not_found', 'No pricing function with this id or name is available to you.', {
        hint: `Did you mean the built-in ${like.name}? Send "${field}": "${value}". ${where}`,
        fields: field === 'function_name' ? { suggested_function_name: value } : { suggested_function_id: value },
      });
    }
    case 'outside_plan':
      // Keyless callers reach built-ins only too; their answer stays the demo's own 404.
      if (opts.keyless) return toApiError(new EngineError('function_not_found', ''), opts);
      return sandboxRefusal('price with marketplace functions', opts.claimOffered ?? true);
    case 'function_draft':
      return new ApiError('function_draft', err.message, { hint: 'Only active functions can be routed to explicitly.', fields: { function_id: d.functionId, status: 'draft' } });
    case 'function_inactive':
      return new ApiError('function_inactive', err.message, { hint: `Pick another function, or let your routing choose (omit ${opts.pinnedBy ?? 'function_id'}).`, fields: { function_id: d.functionId, status: 'inactive' } });
    case 'no_eligible_function':
      return new ApiError('no_eligible_function', err.message, {
        hint: `Every candidate was excluded; candidates lists each one and why${d.attempts ? ", attempts why each of the policy's fallbacks could not run" : ''}. ${capitalized(loosenAdvice(d, opts))}.`,
        fields: exclusionFields(d),
      });
    case 'functions_failed':
      // Every candidate excluded, some only by an open breaker (engine/excluded.ts): the exclusion's fields, and a wait.
      if (d.candidates) {
        return new ApiError('functions_failed', err.message, {
          hint: `Nothing was charged. Every candidate was excluded, and an open circuit breaker is all that keeps out one that would run (candidates lists each one and why${d.attempts?.length ? ", attempts why each of the policy's fallbacks could not run" : ''}): ${
            d.retryAfterS ? `retry after ${d.retryAfterS} s, when the first lets a trial call through` : 'retry later'
          }, or ${loosenAdvice(d, opts)}.`,
          ...(d.retryAfterS ? { retry_after: d.retryAfterS } : {}),
          fields: { retryable: true, ...exclusionFields(d) },
        });
      }
      if (d.permanent) {
        const meanwhile = d.pinned
          ? `meanwhile pin another function, or omit ${opts.pinnedBy ?? 'function_id'} to let your routing choose`
          : `meanwhile ${fallbackAdvice(opts, failedIn(d.attempts))}${opts.keyless || opts.sandbox ? '' : ', or pin another function with function_id'}`;
        return new ApiError('functions_failed', err.message, {
          hint: `Nothing was charged. ${refusedAddressAdvice(d.refusedAt ?? [], d.ownRefusedAt ?? [])}; ${meanwhile}.`,
          fields: { retryable: false, attempts: d.attempts ?? [] },
        });
      }
      return new ApiError('functions_failed', err.message, {
        hint: `Nothing was charged. ${d.retryAfterS ? `Retry after ${d.retryAfterS} s` : 'Retry later'}, or ${
          (d.attempts ?? []).some((a) => a.role === 'fallback_chain' || a.role === 'fallback_function')
            ? opts.policyAccess === 'ask_manager'
              ? "ask an owner or admin of the workspace to add another function to its routing policy's fallbacks: those it names failed or were skipped too (see attempts)."
              : opts.policyAccess === 'needs_full_access'
              ? `add another function to your routing policy's fallbacks with a credential of full access (${FULL_ACCESS_CREDENTIAL}): those it names failed or were skipped too (see attempts).`
              : "add another function to your routing policy's fallbacks: those it names failed or were skipped too (see attempts)."
            : `${fallbackAdvice(opts, failedIn(d.attempts))}.`
        }${
          // The functions that did not fail could not price this context: more inputs would let them, failure or not.
          (d.attempts ?? []).some((a) => a.outcome === 'not_applicable')
            ? ' The others tried could not price this context as given; their errors in attempts name the inputs they need.'
            : ''
        }`,
        ...(d.retryAfterS ? { retry_after: d.retryAfterS } : {}),
        fields: { retryable: true, attempts: d.attempts ?? [] },
      });
    case 'service_busy':
      return new ApiError('service_busy', err.message, {
        hint: `Nothing was charged and no function was at fault. Retry after ${BUSY_RETRY_AFTER_S} s.`,
        retry_after: BUSY_RETRY_AFTER_S,
        fields: { retryable: true, attempts: d.attempts ?? [] },
      });
    case 'insufficient_context': {
      if (d.refused?.length) {
        return new ApiError('insufficient_context', err.message, {
          hint: `Fix ${d.refused.join(' and ')} as the message says; no other function was tried with ${d.refused.length > 1 ? 'these values' : 'this value'} (one that does not read ${d.refused.length > 1 ? 'them' : 'it'} would hide the mistake behind its price). docs/functions.md gives every input's bounds.`,
          issues: d.refused.map((key) => ({ path: `context.${key}`, reason: err.message.replace(/^The context cannot be priced by [^:]+: /, '') })),
          fields: { missing: [], refused: d.refused, attempts: d.attempts ?? [] },
        });
      }
      // Values an endpoint would not price as given (a currency it does not answer in): named as refused, by the reason given,
      // though other functions were tried with them (unlike a refused value above, which stops the walk).
      const declined = d.declined?.length ? { refused: d.declined.map((x) => x.input) } : {};
      const declinedIssues = d.declined?.length ? { issues: d.declined.map((x) => ({ path: `context.${x.input}`, reason: x.reason })) } : {};
      if (d.excludedCouldPrice?.length) {
        const ex = d.excludedCouldPrice;
        const named = ex.map((c) => `${c.function} (${c.reason}${c.detail ? `: ${c.detail}` : ''})`).join(', ');
        return new ApiError('insufficient_context', err.message, {
          hint: `Your routing policy left out ${ex.length > 1 ? 'functions' : 'a function'} that could price this context: ${named}. Loosen the policy (PATCH /api/routing-policies/${d.policyId ?? '{id}'}: its max_cost_per_unit, max_latency_ms, rules or weights), name one with function_id, or add the inputs the functions tried need (missing).`,
          ...declinedIssues,
          fields: { missing: d.missing ?? [], ...declined, excluded_by_policy: ex, ...inputsOf(d), attempts: d.attempts ?? [] },
        });
      }
      if (!d.missing?.length) {
        // Every function that ran had its inputs and still could not price (a price too small for the currency's smallest unit, say).
        return new ApiError('insufficient_context', err.message, {
          hint: d.declined?.length
            ? declinedHint(d.declined.map((x) => x.input), d.attempts ?? [], opts)
            : d.endpointRefused?.length
              ? endpointRefusedHint(d.endpointRefused, d.attempts ?? [], opts)
              : 'No input is missing: the message gives the reason each function could not price this context and how to change the values it names.',
          ...declinedIssues,
          fields: { missing: [], ...declined, ...inputsOf(d), attempts: d.attempts ?? [] },
        });
      }
      // A pinned function, or a policy's narrower set, may not price what any built-in would: the general advice and a stock
      // example (priced by another function than the one meant) would contradict the call.
      const missing = d.missing ?? [];
      const them = missing.length > 1 ? 'them' : 'it';
      if (opts.pinnedBy || opts.hasPolicy) {
        // Under a pin, `missing` also holds what the policy's fallbacks lacked: only the pinned function's own inputs are its needs.
        const own = d.chosenMissing ?? [];
        const pinnedHint = own.length
          ? `Add ${own.join(', ')} to the context: the function you named with ${opts.pinnedBy} needs ${own.length > 1 ? 'them' : 'it'} (attempts give its reason, inputs_by_function what each built-in reads), or omit ${opts.pinnedBy} to let routing choose a function that prices what you sent.`
          : `The function you named with ${opts.pinnedBy} lacks no input: it could not price this context as sent (its attempt gives why${d.declined?.length ? `; issues name the values it would not price` : ''}). ${missing.join(', ')} (missing) ${missing.length > 1 ? 'are' : 'is'} what your policy's fallbacks need: adding ${them} gets a price from a fallback, not from the function you named. Send values it prices, or omit ${opts.pinnedBy} to let routing choose.`;
        return new ApiError('insufficient_context', err.message, {
          hint: opts.pinnedBy
            ? pinnedHint
            : `Add ${missing.join(', ')} to the context: the functions your default routing policy let run need ${them} (attempts give each one's reason, inputs_by_function what each built-in reads). A current_price alone gets a (low-confidence) price from anchored-adjustment, where the policy lets it run.`,
          ...declinedIssues,
          fields: { missing, ...declined, ...inputsOf(d), attempts: d.attempts ?? [] },
        });
      }
      // "A current_price alone gets a price" is no advice to a caller whose current_price did not get one (one too small to price).
      const sentCurrentPrice = opts.context?.current_price !== undefined && opts.context.current_price !== null;
      return new ApiError('insufficient_context', err.message, {
        hint: sentCurrentPrice
          ? 'Add one of the inputs in missing (inputs_by_function says what each built-in reads): the current_price you sent did not get a price on its own (attempts give each function\'s reason).'
          : `Add the inputs a method needs; with no price history a current_price alone still gets a (low-confidence) price${OBSERVATIONS_HINT}.`,
        ...declinedIssues,
        fields: { missing: d.missing ?? [], ...declined, ...inputsOf(d), attempts: d.attempts ?? [] },
        example: { context: { product_type: 'coffee', currency: 'USD', current_price: 4.5, unit_cost: 1.2 } },
      });
    }
    case 'pipeline_execution_unavailable':
      return pipelineUnavailable(opts.keyless);
    case 'explicit_without_function':
      return new ApiError('validation_error', err.message, {
        issues: [{ path: 'function_id', reason: 'required when routing_preference is "explicit"' }],
        hint: opts.keyless
          ? `Name the built-in to pin as function_id (the demo reaches ${BUILTINS.map((b) => b.id).join(', ')}), or leave routing_preference out to let the demo choose.`
          : 'Name the function to pin (function_id; GET /api/functions lists those you can use), or leave routing_preference out to let your default routing policy choose.',
        example: explicitExample(opts.context, opts.market),
      });
  }
}
