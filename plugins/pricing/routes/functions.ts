import type { Principal } from '../../../core/auth';
import type { MarketEvidenceSlot } from '../services/market-evidence';
import { ApiError } from '../../../core/errors';
import { dailyQuotaRefusal } from '../../../core/daily-quota';
import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { pageByKey } from '../../../core/pagination';
import type { SafeHttpClient } from '../../../core/outbound/safe-http-client';
import { dec } from '../../../core/money';
import { EngineError, builtinOf, NO_DATA, effectiveCost, healthCallerOf, isReachable, latencyView } from '../../../engine';
import type { CircuitBreakers, FunctionDescriptor, FunctionRegistry, LatencyStats, PricingEngine } from '../../../engine';
import { assertManagesWorkspace, createIdempotencyHeaders } from '../../identity';
import type { IdempotencyKeys, Workspaces } from '../../identity';
import * as s from '../schemas';
import type { CallSchemas } from '../schemas';
import type { TestRunQuota } from '../services/test-run-quota';
import type { RequestSigning } from '../services/request-signing';
import { callerScopeOf, healthCallerOfPrincipal } from '../services/caller-scope';
import { functionCreateResponse, functionReadResponse, functionTestResponse, functionUpdateResponse, functionsListResponse } from '../responses-functions';
import { marketplaceOutsidePlan, pipelineUnavailable, toApiError } from '../services/engine-errors';
import type { FunctionRecord, FunctionStore } from '../services/function-store';
import { PATCH_CHANGING_NOTHING, createExampleFromSent, patchExampleFromSent } from './policy-example';
import { functionDeletion } from './function-withdrawal';
import { checkCallCost, checkEndpoint, checkEndpointFields, checkStoredEndpoint, checkTimeout, mendedCreate, refusedAfterSchema } from './function-checks';

export interface FunctionRouteDeps {
  store: FunctionStore;
  registry: FunctionRegistry;
  engine: PricingEngine;
  /** The network's observations for a tested built-in, as a compute would have them. */
  market: MarketEvidenceSlot;
  latency: LatencyStats;
  breakers: CircuitBreakers;
  outbound: SafeHttpClient;
  commissionPct: () => number;
  /** FUNCTION_MAX_CALL_COST. */
  maxCallCost: () => number;
  /** COMPUTE_CALL_MAX_MS: no attempt within a priced call runs longer, so no endpoint's timeout_ms may ask for more. */
  callMaxMs: () => number;
  idempotency: IdempotencyKeys;
  /** Whose role decides who registers and changes functions (owners and admins; members read them). */
  workspaces: Pick<Workspaces, 'roleOf'>;
  /** This instance's id: breakers are kept per instance, so a reading says whose it is. */
  instanceId: string;
  /** The test run's body carries a compute context of the configured size. */
  testFunctionBody: CallSchemas['testFunctionBody'];
  /** Counts test runs of functions the caller's workspace does not own. */
  testRuns: TestRunQuota;
  /** External functions' signing secrets: shown to the owner on registration. */
  signing: RequestSigning;
  /** Whether a sandbox can be claimed here (claimOffered): a sandbox's refusal offers the claim only then. */
  claimOffered: boolean;
}

/** Completes "Only owners and admins …" in the 403 of a member (or a member's key, or an agent's) on create and PATCH. */
const MANAGE_FUNCTIONS = "register or change this workspace's functions";


export function functionView(fn: FunctionDescriptor, d: Pick<FunctionRouteDeps, 'latency' | 'breakers'>, viewer: string, breakerReader?: string): Record<string, unknown> {
  const lat = latencyView(d.latency.snapshot(fn.id));
  const own = fn.workspaceId === viewer;
  return {
    id: fn.id,
    name: fn.name,
    built_in: fn.builtIn,
    label: fn.builtIn ? 'built-in' : own ? 'yours' : 'marketplace',
    status: fn.status,
    execution_type: fn.executionType,
    is_public: fn.isPublic,
    description: fn.description,
    tags: fn.tags,
    cost_per_unit: fn.costPerUnit,
    cost_multiplier: fn.costMultiplier,
    effective_cost_per_call: effectiveCost(fn),
    average_latency_ms: d.latency.average(fn.id) ?? NO_DATA,
    // Another workspace's function's sample count is its call volume: withheld as the leaderboard withholds its usage.
    latency: { p50_ms: lat.p50_ms, p95_ms: lat.p95_ms, samples: d.breakers.showsVolume(fn, viewer) ? lat.samples : null, window_ms: lat.window_ms },
    // As the reader's calls meet it: the function's breaker, or the reader's own when only that one keeps it out.
    breaker: d.breakers.state(fn.id, breakerReader),
    ...(own && fn.endpointUrl ? { endpoint_url: fn.endpointUrl, timeout_ms: fn.timeoutMs ?? null } : {}),
    // The listing's commission is between its owner and the marketplace: shown to the owner, on every read.
    ...(own ? { commission_pct: fn.commissionPct ?? null } : {}),
  };
}

/** Listing order: built-ins first, then by name (names are unique and lowercase). */
export const functionSortKey = (fn: FunctionDescriptor): string => `${fn.builtIn ? 0 : 1}:${fn.name}`;
/** What every functionSortKey looks like (pageByKey's keyShape). */
export const FUNCTION_SORT_KEY = /^[01]:./;

/**
 * A draft was never active, so there is nothing to deactivate (SPEC's states: draft to active, active to inactive):
 * it is already out of routing, and an inactive one's refusal would say its owner deactivated it.
 */
function draftNotDeactivated(fn: FunctionDescriptor, rest: Record<string, unknown>): ApiError {
  const others = Object.keys(rest).length > 0;
  return new ApiError('function_draft', `Function "${fn.name}" is a draft: it has never been active, so it cannot be deactivated; it stays out of routing until its owner activates it with PATCH /api/functions/${fn.id} {"status":"active"}.`, {
    hint: `Leave it as a draft to keep it unused${others ? ': the example is your change without the status, and keeps it a draft' : ''}, or activate it; only an active function is deactivated.`,
    fields: { function_id: fn.id, status: 'draft' },
    // Never the activation: the caller asked to keep the function out of use, and activating a public draft lists it.
    ...(others ? { example: rest } : {}),
  });
}

/**
 * The caller's own workspace function by id or name, for a change: a built-in is refused (403), as is another workspace's
 * function the caller reaches on the marketplace; one out of reach is the 404 of a missing one, and a member is told only
 * owners and admins change functions.
 */
export async function ownedFunction(d: Pick<FunctionRouteDeps, 'registry' | 'store' | 'workspaces'>, p: Principal, id: string): Promise<FunctionRecord> {
  const builtIn = d.registry.find(id);
  // Built-ins are everyone's to read and nobody's to change: saying so leaks nothing.
  if (builtIn?.builtIn) {
    throw new ApiError('forbidden', `${builtIn.name} is a built-in function: built-ins cannot be changed.`, {
      fields: { reason: 'built-in function' },
      hint: 'Register a function of your own (POST /api/functions) to set its cost, status or listing; route around a built-in with a routing policy.',
    });
  }
  // By id, or by the name of one of the workspace's own functions (GET and test take either too).
  let fn = await d.store.get(id);
  if (!fn) {
    const named = d.registry.resolve(id, callerScopeOf(p), 'name');
    if (named?.workspaceId === p.workspaceId) fn = await d.store.get(named.id);
  }
  if (!fn || fn.workspaceId !== p.workspaceId) {
    // A marketplace function the caller reaches (it prices with it, GET shows it) hides nothing: a 404 would say it is not
    // there. One out of reach answers the same 404 as a missing one.
    const listed = d.registry.resolve(id, callerScopeOf(p));
    if (listed && !listed.builtIn && listed.workspaceId !== p.workspaceId) {
      throw new ApiError('forbidden', `${listed.name} is another workspace's function, listed on the marketplace: only its owner can change it.`, {
        fields: { reason: 'function of another workspace' },
        hint: 'Register a function of your own (POST /api/functions) to set its cost, status or listing; to stop using this one, route around it with a routing policy.',
      });
    }
    throw notFound();
  }
  // The workspace's own function is the member's to see (GET shows it), so its refusal says why rather than 404.
  await assertManagesWorkspace(p, d.workspaces, MANAGE_FUNCTIONS);
  return fn;
}

export function functionRoutes(d: FunctionRouteDeps): RouteSpec[] {
  const owned = (p: Principal, id: string) => ownedFunction(d, p, id);
  // The PATCH, which a DELETE's 405 offers only to a caller it would let through.
  let update: RouteSpec;
  return [
    defineRoute({
      id: 'functions.list',
      method: 'get',
      path: '/api/functions',
      summary: 'Functions you can use: built-ins, your own (any status) and active public ones.',
      tags: ['Functions'],
      sandbox: true,
      query: s.functionsQuery,
      responses: { 200: { description: 'A page of the functions the caller can reach.', schema: functionsListResponse } },
      handler: ({ principal, query }) => {
        const p = principal as Principal;
        const fns = d.registry
          .all()
          .filter((f) => isReachable(f, callerScopeOf(p)))
          .filter((f) => (query.built_in === undefined ? true : query.built_in === 'true' ? f.builtIn : !f.builtIn));
        return ok(pageByKey(fns, functionSortKey, (f) => f.id, query, (f) => functionView(f, d, p.workspaceId, healthCallerOfPrincipal(p)), FUNCTION_SORT_KEY));
      },
    }),
    defineRoute({
      id: 'functions.read',
      method: 'get',
      path: '/api/functions/:id',
      summary: 'One function you can use, with its latency statistics and breaker state.',
      tags: ['Functions'],
      sandbox: true,
      params: s.idParams,
      responses: { 200: { description: 'The function and its circuit breaker on the instance that answered.', schema: functionReadResponse }, 403: marketplaceOutsidePlan },
      handler: ({ principal, params }) => {
        const p = principal as Principal;
        const scope = callerScopeOf(p);
        const fn = d.registry.resolve(params.id, scope);
        if (!fn) {
          // As compute answers a sandbox naming a marketplace function (public and active: naming it reveals nothing).
          if (scope.builtInsOnly && d.registry.resolve(params.id, { ...scope, builtInsOnly: false })) throw toApiError(new EngineError('outside_plan', ''), { claimOffered: d.claimOffered });
          throw notFound(scope.builtInsOnly);
        }
        // Its owner also reads why its last calls failed (others' included), on this instance: other workspaces' usage
        // events name no reason, and the owner's endpoint is theirs to fix.
        const own = !fn.builtIn && fn.workspaceId === p.workspaceId;
        return ok({
          function: functionView(fn, d, p.workspaceId, healthCallerOf(scope)),
          breaker: { ...d.breakers.readerView(fn, healthCallerOf(scope), p.workspaceId), instance: d.instanceId, kept_per: 'instance', ...(own ? { recent_failures: d.breakers.recentFailures(fn.id) } : {}) },
        });
      },
    }),
    defineRoute({
      id: 'functions.create',
      method: 'post',
      path: '/api/functions',
      summary: 'Owners and admins: register a workspace function (created as draft; activate it with PATCH).',
      tags: ['Functions'],
      fullAccess: true,
      body: s.registerFunctionBody,
      example: s.registerFunctionExample,
      // What was sent, a refused or missing field the body needs (name, endpoint) replaced by the example's placeholder.
      exampleFor: (sent) => {
        const example = createExampleFromSent(s.registerFunctionBody, sent, s.registerFunctionNeeds);
        return example ? mendedCreate(example, d) : example;
      },
      headers: createIdempotencyHeaders,
      // An external_api function's answer carries its signing secret, shown here (and on a replay) only.
      returnsSecret: true,
      responses: { 201: { description: 'The function, as a draft, and how to activate it; a repeat under the same Idempotency-Key answers the function as it is now (Idempotent-Replayed: true).', schema: functionCreateResponse } },
      precheck: ({ principal }) => assertManagesWorkspace(principal as Principal, d.workspaces, MANAGE_FUNCTIONS),
      handler: async ({ principal, body, req, sent }) => {
        const p = principal as Principal;
        checkEndpointFields(body.execution_type, body.name, body);
        // One example for every refusal below, made only by one: what was sent, each refused field as the stock placeholder.
        const example = () => mendedCreate(body, d);
        if (body.endpoint_url) checkEndpoint(d.outbound, body.endpoint_url, example);
        checkTimeout(body.timeout_ms, d.callMaxMs(), example);
        checkCallCost(body.cost_per_unit, body.cost_multiplier, d.maxCallCost(), example);
        const answer = (fn: FunctionDescriptor, replay = false) =>
          created({
            function: functionView(fn, d, p.workspaceId, healthCallerOfPrincipal(p)),
            ...(replay ? d.signing.shownOnReplay(fn) : d.signing.shown(fn)),
            ...pipelineWarning(fn),
            ...(fn.status === 'draft' ? { next: [{ action: 'activate', method: 'PATCH', path: `/api/functions/${fn.id}`, body: { status: 'active' } }] } : {}),
          });
        // A name conflict says whose the name is: the caller's own function (a create sent twice), or another's, beside a free variant.
        const nameTaken = async (err: unknown): Promise<never> => {
          // The other conflict of a create: the workspace holds as many functions as it may (limit).
          if (!(err instanceof ApiError && err.code === 'conflict') || err.extras.limit !== undefined) throw err;
          const mine = d.registry.getByName(body.name);
          if (mine && mine.workspaceId === p.workspaceId) {
            throw err.with({
              hint: `Your workspace registered this name already, as ${mine.id} (${mine.status}): GET /api/functions/${mine.id} shows it, PATCH changes it. To make a repeated create safe, send an Idempotency-Key.`,
              fields: { function_id: mine.id },
            });
          }
          const free = await d.store.freeVariant(body.name);
          if (!free) throw err;
          throw err.with({ hint: `"${free}" is free right now: example is your request under that name. Or choose your own, for example prefixed with your company or product.`, example: { ...(sent as Record<string, unknown>), name: free } });
        };
        // Amounts compared by value: "0.0010" repeats "0.001".
        const claim = d.idempotency.claimOf(req, 'functions.create', p.workspaceId, { ...body, cost_per_unit: dec(body.cost_per_unit).toString(), cost_multiplier: dec(body.cost_multiplier).toString() });
        return d.idempotency.run(
          claim,
          async (take) => {
            const fn = await d.store
              .create(
                {
                  workspaceId: p.workspaceId,
                  name: body.name,
                  description: body.description,
                  tags: body.tags,
                  executionType: body.execution_type,
                  isPublic: body.is_public,
                  costPerUnit: body.cost_per_unit,
                  costMultiplier: body.cost_multiplier,
                  endpointUrl: body.endpoint_url ?? null,
                  timeoutMs: body.timeout_ms ?? null,
                },
                take,
              )
              .catch((err: unknown) => nameTaken(err));
            await d.registry.changed(fn.id);
            return answer(fn);
          },
          // The function as it is now (it may have been activated since): what the first request created.
          async (id) => {
            const fn = await d.store.get(id);
            return fn && fn.workspaceId === p.workspaceId ? answer(fn, true) : null;
          },
        );
      },
    }),
    (update = defineRoute({
      id: 'functions.update',
      method: 'patch',
      path: '/api/functions/:id',
      // Usage records and policies name a function for good: it is withdrawn, never deleted, by those who may PATCH it.
      missingMethods: { delete: functionDeletion(d.registry, () => update) },
      summary: 'Owners and admins: activate, deactivate, list publicly, or change description, tags, cost or endpoint.',
      tags: ['Functions'],
      fullAccess: true,
      params: s.idParams,
      body: s.patchFunctionBody,
      // Not a stock change (a new description): a body that is not JSON gets {}, which changes nothing, as a policy's does.
      example: PATCH_CHANGING_NOTHING,
      // What was sent with each refused field left out ({} when nothing is left, which changes nothing): never an
      // activation or a listing the caller did not ask for.
      exampleFor: (sent) => patchExampleFromSent(s.patchFunctionBody, sent),
      responses: { 200: { description: 'The function as changed.', schema: functionUpdateResponse } },
      handler: async ({ principal, params, body }) => {
        const p = principal as Principal;
        const before = await owned(p, params.id);
        // As for a refused body: what was sent without the refused values, never a sample that would change the function.
        const sentWithout = (...refused: string[]) => Object.fromEntries(Object.entries(body).filter(([k, v]) => v !== undefined && !refused.includes(k)));
        // Every field the checks below refuse left out at once, so no example is refused by the next of them; worked out
        // only when one refuses.
        const refused = () => [...refusedAfterSchema(body, d, before)].flatMap((f) => (f === 'cost' ? ['cost_per_unit', 'cost_multiplier'] : [f]));
        const sentWithoutRefused = (...also: string[]) => () => sentWithout(...also, ...refused());
        if (body.status === 'inactive' && before.status === 'draft') throw draftNotDeactivated(before, sentWithoutRefused('status')());
        checkEndpointFields(before.executionType, before.name, body);
        if (body.endpoint_url) checkEndpoint(d.outbound, body.endpoint_url, sentWithoutRefused());
        // An address registered under other outbound rules (the operator changed them since) is checked again when it goes live.
        // Its example is the activation with a new address: status alone would be refused again.
        else if (body.status === 'active' && before.endpointUrl) {
          checkStoredEndpoint(d.outbound, before.endpointUrl, () => ({ ...sentWithoutRefused('status')(), status: 'active', endpoint_url: s.registerFunctionExample.endpoint_url }));
        }
        checkTimeout(body.timeout_ms ?? undefined, d.callMaxMs(), sentWithoutRefused());
        if (body.cost_per_unit !== undefined || body.cost_multiplier !== undefined) {
          checkCallCost(body.cost_per_unit ?? before.costPerUnit, body.cost_multiplier ?? before.costMultiplier, d.maxCallCost(), sentWithoutRefused());
        }
        if (body.status === 'active' && before.executionType === 'external_api' && !(body.endpoint_url ?? before.endpointUrl)) {
          throw new ApiError('validation_error', 'An external_api function needs endpoint_url before activation.', {
            issues: [{ path: 'endpoint_url', reason: 'required to activate' }],
            hint: `Send the public https address the service should call, with the activation or before it (for example "endpoint_url": "${s.registerFunctionExample.endpoint_url}", your own address in its place).`,
            example: sentWithout('status'),
          });
        }
        const fn = await d.store.update(
          before.id,
          p.workspaceId,
          {
            status: body.status,
            description: body.description,
            tags: body.tags,
            isPublic: body.is_public,
            costPerUnit: body.cost_per_unit,
            costMultiplier: body.cost_multiplier,
            endpointUrl: body.endpoint_url,
            timeoutMs: body.timeout_ms,
          },
          d.commissionPct(),
        );
        if (!fn) throw notFound();
        await d.registry.changed(fn.id);
        // Its failures were at the old address: its breakers (on this instance) let the next call through as their trial
        // instead of keeping it out until their cooldown ends.
        if (body.endpoint_url !== undefined && body.endpoint_url !== before.endpointUrl) d.breakers.expedite(fn.id);
        return ok({ function: functionView(fn, d, p.workspaceId, healthCallerOfPrincipal(p)), ...pipelineWarning(fn) });
      },
    }) as RouteSpec),
    defineRoute({
      id: 'functions.test',
      method: 'post',
      path: '/api/functions/:id/test',
      summary: 'Run one function on a context (no routing, fallback or cache).',
      description:
        "A test run is neither recorded nor charged. Runs of functions your workspace does not own (built-ins, marketplace functions) count against a daily allowance per workspace (FUNCTION_TEST_RUNS_PER_DAY): each such run answers test_runs, and the one past it 429 daily_quota_exceeded with retry_after to 00:00 UTC (price with POST /api/compute/price instead). Runs of your own functions are not counted.",
      tags: ['Functions'],
      scopes: ['price:compute'],
      params: s.idParams,
      body: d.testFunctionBody,
      example: s.testFunctionExample,
      responses: {
        200: { description: 'The run: its result, or why the function could not price (a 200 either way).', schema: functionTestResponse },
        429: dailyQuotaRefusal('the workspace ran FUNCTION_TEST_RUNS_PER_DAY test runs of functions it does not own today', true, '; price with POST /api/compute/price meanwhile'),
      },
      handler: async ({ principal, params, body }) => {
        const p = principal as Principal;
        const fn = d.registry.find(params.id);
        if (!fn) throw notFound();
        if (!isReachable(fn, callerScopeOf(p))) {
          // One answer for a private function and a public one its owner has not activated (or has deactivated): neither is
          // on the marketplace, and which of the two it is (its listing flag, its status) is the owner's business.
          throw new ApiError('forbidden', "This is another workspace's function and it is not on the marketplace (private, or not active); only its owner can test it.", {
            fields: { reason: 'function of another workspace not on the marketplace' },
            hint: 'Built-in functions and active public functions can be tested by anyone.',
          });
        }
        if (fn.executionType === 'pipeline') throw pipelineUnavailable();
        const counted = fn.workspaceId === p.workspaceId ? null : await d.testRuns.count(p.workspaceId);
        let r: Awaited<ReturnType<typeof d.engine.test>>;
        try {
          r = await d.engine.test(fn, body.context, (await d.market.forContext(body.context))?.evidence, p.workspaceId);
        } catch (err) {
          await counted?.release();
          throw err;
        }
        // A run no worker could take never reached the function: it is given back.
        const neverRan = !r.ok && r.busy === true;
        if (neverRan) await counted?.release();
        const allowance = counted && !neverRan ? { test_runs: counted.allowance } : {};
        return ok({ function: { id: fn.id, name: fn.name, status: fn.status }, ...(r.ok ? { ok: true, result: r.result } : { ok: false, error: r.error, ...(r.failure ? { failure: r.failure } : {}), ...(r.retryAfterS !== undefined ? { retry_after: r.retryAfterS } : {}), ...(r.missing ? { missing: r.missing } : {}), ...(r.refused ? { refused: r.refused } : {}), ...exampleFor(fn) }), ms: r.ms, ...allowance });
      },
    }),
  ];
}

/** A body a built-in's test run prices, offered beside a run that could not. */
function exampleFor(fn: FunctionDescriptor): { example?: { context: Record<string, unknown> } } {
  const context = builtinOf(fn)?.example;
  return context ? { example: { context } } : {};
}

/** Said whenever a pipeline function is created or changed: it can be registered and listed, but never run (yet). */
function pipelineWarning(fn: FunctionDescriptor): { warnings?: string[] } {
  return fn.executionType === 'pipeline'
    ? { warnings: ['Pipeline execution is not available: this function is registered, but a compute or a test run naming it (function_id, function_name) answers 501 pipeline_execution_unavailable, and a routing policy naming it skips it (candidate reason "pipeline unavailable"; a call the policy leaves with no other function answers 422 no_eligible_function). Use an external_api function to price now.'] }
    : {};
}

/** The 404 of a function missing or out of reach. `sandbox`: its hint names the built-ins a sandbox reaches, not marketplace functions it cannot. */
export const notFound = (sandbox = false): unknown => toApiError(new EngineError('function_not_found', ''), { sandbox });
