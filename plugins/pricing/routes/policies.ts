import { z } from 'zod';
import type { Principal } from '../../../core/auth';
import { ApiError } from '../../../core/errors';
import { created, defineRoute, ok } from '../../../core/http/route';
import type { RouteSpec } from '../../../core/http/route';
import { decodeTimeCursor, listEnvelope, listQuery } from '../../../core/pagination';
import { validate } from '../../../core/validation';
import { policySchema } from '../../../engine';
import type { FunctionRegistry, PolicyShape } from '../../../engine';
import { assertManagesWorkspace, createIdempotencyHeaders } from '../../identity';
import type { IdempotencyKeys, Workspaces } from '../../identity';
import * as s from '../schemas';
import { policyView } from '../services/policy-store';
import { callerScopeOf } from '../services/caller-scope';
import { policyDeleteResponse, policyListResponse, policyReadResponse, policyWrittenResponse } from '../responses-policies';
import { PATCH_CHANGING_NOTHING, createExampleFor, patchExample, patchExampleFromSent, withoutNames } from './policy-example';
import type { PolicyRecord, PolicyStore } from '../services/policy-store';

/** Every function reference a policy holds, with where it sits in the policy. */
function functionRefs(p: PolicyShape): Array<{ path: string; ref: string }> {
  return [
    ...p.fallback_chain.map((ref, i) => ({ path: `fallback_chain.${i}`, ref })),
    ...(p.fallback_function ? [{ path: 'fallback_function', ref: p.fallback_function }] : []),
    ...(p.config.rules ?? []).map((r, i) => ({ path: `config.rules.${i}.use`, ref: r.use })),
    ...(p.config.default_function ? [{ path: 'config.default_function', ref: p.config.default_function }] : []),
    ...Object.keys(p.config.weights ?? {}).map((ref) => ({ path: `config.weights.${ref}`, ref })),
    ...(p.config.order ?? []).map((ref, i) => ({ path: `config.order.${i}`, ref })),
    ...(p.config.candidates ?? []).map((ref, i) => ({ path: `config.candidates.${i}`, ref })),
  ];
}

/**
 * Refuses a PATCH that carries over, unsent, a name the policy held before any function did (saved
 * before names were checked) now that a function holds it: the PATCH would bind the name to that
 * function, registered later by whoever took it. Sent again, the name is meant and binds.
 */
function refuseLateBindings(current: PolicyRecord, body: Record<string, unknown>, registry: FunctionRegistry): void {
  const carried: PolicyShape = {
    ...current,
    fallback_chain: body.fallback_chain === undefined ? current.fallback_chain : [],
    fallback_function: body.fallback_function === undefined ? current.fallback_function : null,
    config: body.config === undefined ? current.config : {},
  };
  const savedAt = Date.parse(current.updated_at);
  const late = functionRefs(carried).filter((r) => {
    const fn = /^fn_/i.test(r.ref) ? undefined : registry.find(r.ref);
    return fn?.createdAt !== undefined && Date.parse(fn.createdAt) > savedAt;
  });
  if (late.length === 0) return;
  const names = new Set(late.map((r) => r.ref));
  // Without the names: binding them to whoever holds them now is the caller's call, not an example's.
  const example = patchExample(current, body, (ref) => names.has(ref))?.example;
  throw new ApiError('validation_error', `This policy named ${[...names].map((n) => `"${n}"`).join(', ')} before any function held the name; a function registered later holds it now.`, {
    issues: late.map((r) => ({ path: r.path, reason: `"${r.ref}" was saved here before any function held the name; send this field again to mean the function holding it now, or leave the name out` })),
    hint: `GET /api/functions shows who holds a name. Send the field again (with or without the name) in this PATCH${example ? '; example sends it without the name' : ''}.`,
    ...(example ? { example } : {}),
  });
}

/** References a policy names that the workspace cannot reach now (kept, skipped at routing time). */
function unreachableRefs(p: PolicyShape, registry: FunctionRegistry, principal: Principal): string[] {
  const scope = callerScopeOf(principal);
  return [...new Set(functionRefs(p).map((r) => r.ref).filter((r) => !registry.resolve(r, scope)))];
}

/**
 * Refuses names no function holds yet: a policy resolves its names on every call, so a name kept
 * for later would bind to whoever registers it first, a stranger included, and route (and charge)
 * the workspace's calls there. Names are never freed or changed, so one that exists now always
 * means the same function. Ids cannot be taken over and stay as warnings when out of reach.
 */
function refuseUnknownNames(p: PolicyShape, registry: FunctionRegistry, exampleWithout: (isUnknown: (ref: string) => boolean) => unknown): void {
  const isUnknown = unknownName(registry);
  const unknown = functionRefs(p).filter((r) => isUnknown(r.ref));
  if (unknown.length === 0) return;
  const names = [...new Set(unknown.map((r) => r.ref))];
  const example = exampleWithout(isUnknown);
  // The message names a few (1000 unknown weights would make it 10 KB); issues name every one, each at its place.
  const shown = names.slice(0, NAMES_IN_MESSAGE).map((n) => `"${n}"`).join(', ') + (names.length > NAMES_IN_MESSAGE ? ` and ${names.length - NAMES_IN_MESSAGE} more (issues lists each)` : '');
  throw new ApiError('validation_error', `No pricing function is named ${shown}; a policy may name only functions that exist.`, {
    issues: unknown.map((r) => ({ path: r.path, reason: `no function is named "${r.ref}" (a name held for later would go to whoever registers it first)` })),
    hint: `Register the function first (POST /api/functions), then name it here; GET /api/functions lists the names you can reach. Registered a moment ago on another instance? Retry in a moment.${example !== undefined ? ' example is your request without those names (with sample values, to replace, where the strategy needs one).' : ''}`,
    ...(example !== undefined ? { example } : {}),
  });
}

/** How many unknown names a refusal's message names before "and N more". */
const NAMES_IN_MESSAGE = 5;

/**
 * How many functions a warning names before "and N more": a policy may name a few hundred (50 candidates, 50 in order,
 * 50 weights, 100 rules, 20 fallbacks), and a warning is answered on every create and PATCH.
 */
const NAMES_IN_WARNING = 10;
const someOf = (names: readonly string[]): string =>
  names.slice(0, NAMES_IN_WARNING).join(', ') + (names.length > NAMES_IN_WARNING ? ` and ${names.length - NAMES_IN_WARNING} more` : '');

/** Whether a reference is a name no function holds (an id is never taken over, so never refused). */
const unknownName = (registry: FunctionRegistry) => (ref: string): boolean => !/^fn_/i.test(ref) && !registry.find(ref);

/** The lists among functionRefs' places whose entries are tried in turn, in the order their warnings are given. */
const REPEATABLE_LISTS = ['config.candidates', 'config.order', 'fallback_chain'] as const;

/**
 * The lists of a policy that name one function more than once (by name and by id, say): kept as sent, but each function
 * is tried once, where it first appears, so the repeat is most likely a mistake for another function.
 */
function repeatedRefs(p: PolicyShape, registry: FunctionRegistry, principal: Principal): string[] {
  const scope = callerScopeOf(principal);
  const seen = new Set<string>();
  const repeated = new Map<string, Set<string>>(REPEATABLE_LISTS.map((list) => [list, new Set<string>()]));
  for (const { path, ref } of functionRefs(p)) {
    const list = path.slice(0, path.lastIndexOf('.'));
    const inList = repeated.get(list);
    if (!inList) continue;
    const key = `${list}\u0000${registry.resolve(ref, scope)?.id ?? ref.trim().toLowerCase()}`;
    if (seen.has(key)) inList.add(ref);
    else seen.add(key);
  }
  return [...repeated].flatMap(([list, refs]) => (refs.size ? [`${list} names ${someOf([...refs])} more than once (by name or by id): each function is tried once, where it first appears.`] : []));
}

/**
 * The functions a policy names that are within reach but not active (the owner's drafts, deactivated ones): kept, and
 * skipped when routing until activated, so a call the policy sends there fails or falls back.
 */
function inactiveRefs(p: PolicyShape, registry: FunctionRegistry, principal: Principal): string[] {
  const scope = callerScopeOf(principal);
  const inactive = new Map<string, string>();
  for (const { ref } of functionRefs(p)) {
    const fn = registry.resolve(ref, scope);
    // A pipeline function is skipped whatever its status (pipelineRefs says so): activating it would not help.
    if (fn && fn.status !== 'active' && fn.executionType !== 'pipeline') inactive.set(fn.id, `${fn.name} (${fn.status})`);
  }
  return inactive.size ? [`These functions are not active and will be skipped until activated (PATCH /api/functions/{id} with {"status":"active"}): ${someOf([...inactive.values()])}.`] : [];
}

/**
 * The pipeline functions a policy names (within reach): kept, but pipelines cannot run yet, so routing skips them
 * (candidate reason "pipeline unavailable") and a call the policy leaves with no other function answers 422.
 */
function pipelineRefs(p: PolicyShape, registry: FunctionRegistry, principal: Principal): string[] {
  const scope = callerScopeOf(principal);
  const pipelines = new Map<string, string>();
  for (const { ref } of functionRefs(p)) {
    const fn = registry.resolve(ref, scope);
    if (fn?.executionType === 'pipeline') pipelines.set(fn.id, fn.name);
  }
  return pipelines.size
    ? [`These are pipeline functions, which cannot run yet (pipeline execution is not available): routing skips them (candidate reason "pipeline unavailable"), and a call left with no other function answers 422 no_eligible_function. Name an external_api or built-in function instead: ${someOf([...pipelines.values()])}.`]
    : [];
}

/** Warnings beside the unreachable ones: repeated references, then functions not active, then pipeline functions. */
const otherWarnings = (p: PolicyShape, registry: FunctionRegistry, principal: Principal): string[] => [
  ...repeatedRefs(p, registry, principal),
  ...inactiveRefs(p, registry, principal),
  ...pipelineRefs(p, registry, principal),
];

function withWarnings(view: Record<string, unknown>, missing: string[], repeated: string[] = []): Record<string, unknown> {
  const warnings = [...(missing.length ? [`These functions are out of reach and will be skipped: ${someOf(missing)}.`] : []), ...repeated];
  return warnings.length ? { ...view, warnings } : view;
}

// Another workspace's policy reads as a missing one: whose it is, is not the caller's to know.
const notFoundPolicy = (): ApiError =>
  new ApiError('not_found', 'No routing policy with this id in the workspace.', {
    hint: "GET /api/routing-policies lists this workspace's policies and their ids; a deleted policy is gone for good, create it again with POST /api/routing-policies.",
  });

/** Completes "Only owners and admins …": the default policy decides which function, and so what cost, every call of the workspace gets. */
const MANAGE_POLICIES = "create, change or delete this workspace's routing policies";

export function policyRoutes(store: PolicyStore, registry: FunctionRegistry, idempotency: IdempotencyKeys, workspaces: Pick<Workspaces, 'roleOf'>): RouteSpec[] {
  const managesPolicies = ({ principal }: { principal: Principal | null }) => assertManagesWorkspace(principal as Principal, workspaces, MANAGE_POLICIES);
  const find = async (p: Principal, id: string): Promise<PolicyRecord> => {
    const found = await store.get(p.workspaceId, id);
    if (!found) throw notFoundPolicy();
    return found;
  };
  return [
    defineRoute({
      id: 'policies.list',
      method: 'get',
      path: '/api/routing-policies',
      summary: 'Routing policies of the workspace (newest first).',
      tags: ['Routing policies'],
      sandbox: true,
      query: z.object(listQuery),
      responses: { 200: { description: 'A page of the policies.', schema: policyListResponse } },
      handler: async ({ principal, query }) => {
        const rows = await store.list((principal as Principal).workspaceId, query.limit, query.cursor ? decodeTimeCursor(query.cursor) : undefined);
        return ok(listEnvelope(rows, query.limit, policyView, (r) => ({ sort: r.sortKey, id: r.id })));
      },
    }),
    defineRoute({
      id: 'policies.create',
      method: 'post',
      path: '/api/routing-policies',
      summary: 'Owners and admins: create a routing policy; is_default true makes it the workspace default (one per workspace).',
      tags: ['Routing policies'],
      fullAccess: true,
      precheck: managesPolicies,
      body: s.createPolicyBody,
      example: s.createPolicyExample,
      headers: createIdempotencyHeaders,
      exampleFor: (sent) => createExampleFor(s.createPolicyBody, policySchema, withoutNames(sent, unknownName(registry))),
      responses: { 201: { description: 'The policy, with warnings for function references it cannot reach; a repeat under the same Idempotency-Key answers the policy as it is now (Idempotent-Replayed: true).', schema: policyWrittenResponse } },
      handler: async ({ principal, body, sent, req }) => {
        const p = principal as Principal;
        // Refused for what its strategy needs (weights, rules, order): the example is what was sent, mended, as for a body
        // the schema refuses, so sending it creates the policy meant and not the stock one.
        const checked = policySchema.safeParse(body);
        const exampleWithout = (isBad: (ref: string) => boolean) => createExampleFor(s.createPolicyBody, policySchema, withoutNames(sent, isBad));
        const shape = checked.success ? checked.data : validate(policySchema, body, { example: exampleWithout(unknownName(registry)) ?? s.createPolicyExample });
        refuseUnknownNames(shape, registry, exampleWithout);
        const claim = idempotency.claimOf(req, 'policies.create', p.workspaceId, body);
        return idempotency.run(
          claim,
          async (take) => created({ policy: withWarnings(policyView(await store.create(p.workspaceId, shape, take)), unreachableRefs(shape, registry, p), otherWarnings(shape, registry, p)) }),
          // The policy as it is now (it may have been changed since): what the first request created.
          async (id) => {
            const saved = await store.get(p.workspaceId, id);
            return saved ? created({ policy: withWarnings(policyView(saved), unreachableRefs(saved, registry, p), otherWarnings(saved, registry, p)) }) : null;
          },
        );
      },
    }),
    defineRoute({
      id: 'policies.read',
      method: 'get',
      path: '/api/routing-policies/:id',
      summary: 'One routing policy.',
      tags: ['Routing policies'],
      sandbox: true,
      params: s.idParams,
      responses: { 200: { description: 'The policy.', schema: policyReadResponse } },
      handler: async ({ principal, params }) => ok({ policy: policyView(await find(principal as Principal, params.id)) }),
    }),
    defineRoute({
      id: 'policies.update',
      method: 'patch',
      path: '/api/routing-policies/:id',
      summary: 'Owners and admins: change a routing policy; the policy the patch produces is validated as a whole (400 when invalid).',
      tags: ['Routing policies'],
      fullAccess: true,
      precheck: managesPolicies,
      params: s.idParams,
      body: s.patchPolicyBody,
      // Not a stock change (a rename): sent back as is, an example must not change what the caller did not name.
      example: PATCH_CHANGING_NOTHING,
      // What was sent, its refused values left out; when that would leave the stored policy invalid (a config sent
      // replaces the stored one whole, weights or rules lost with it), made as the handler's refusal makes its example:
      // the stored keys kept beside the sent ones.
      exampleFor: async (sent, { principal, params }) => {
        const isBad = unknownName(registry);
        // Read first: what a strategy sent with a config needs comes from the stored config, never a sample that would replace it.
        const current = principal ? await store.get(principal.workspaceId, (params as { id: string }).id) : undefined;
        const fromSent = patchExampleFromSent(s.patchPolicyBody, withoutNames(sent, isBad), current?.config);
        if (!fromSent || !current || policySchema.safeParse(patched(current, fromSent)).success) return fromSent;
        return patchExample(current, fromSent, isBad)?.example ?? fromSent;
      },
      responses: { 200: { description: 'The policy as changed, with warnings for function references it cannot reach.', schema: policyWrittenResponse } },
      handler: async ({ principal, params, body }) => {
        const p = principal as Principal;
        let shape: PolicyShape | undefined;
        // Applied to the row as stored when the change is made, not as read before it.
        const saved = await store.update(p.workspaceId, params.id, (current) => {
          const merged = patched(current, body);
          // config is replaced as a whole: the likely intent is the stored keys beside the sent ones, plus what the
          // strategy asked for needs and neither holds (sample values, to be replaced); a refused value gives way to the
          // stored one, or is left out, never to a sample that would replace the stored rules or weights.
          const made = patchExample(current, body, unknownName(registry));
          const about = !made
            ? ''
            : `; the example keeps the stored keys beside yours${made.mended ? ', the stored value (or nothing) where yours was refused' : ''}${made.added.length ? ` and adds sample ${made.added.join(' and ')} for "${merged.strategy}" (replace the values)` : ''}`;
          shape = validate(policySchema, merged, {
            hint: `The result must be a valid policy (e.g. "weighted" needs config.weights, "policy" needs config.rules). Fields you send replace the stored ones, and config is replaced as a whole: send every config key the policy keeps (GET /api/routing-policies/${params.id} shows them)${about}.`,
            example: made?.example ?? PATCH_CHANGING_NOTHING,
          });
          refuseUnknownNames(shape, registry, (isUnknown) => patchExample(current, body, isUnknown)?.example);
          refuseLateBindings(current, body, registry);
          return shape;
        });
        if (!saved || !shape) throw notFoundPolicy();
        return ok({ policy: withWarnings(policyView(saved), unreachableRefs(shape, registry, p), otherWarnings(shape, registry, p)) });
      },
    }),
    defineRoute({
      id: 'policies.delete',
      method: 'delete',
      path: '/api/routing-policies/:id',
      summary: 'Owners and admins: delete a routing policy (deleting the default one leaves the built-in default choice).',
      tags: ['Routing policies'],
      fullAccess: true,
      precheck: managesPolicies,
      params: s.idParams,
      responses: { 200: { description: 'The policy is gone.', schema: policyDeleteResponse } },
      handler: async ({ principal, params }) => {
        const p = principal as Principal;
        await find(p, params.id);
        await store.remove(p.workspaceId, params.id);
        return ok({ id: params.id, deleted: true });
      },
    }),
  ];
}

/** The policy a PATCH makes of the stored one: a field sent replaces the stored field (config as a whole), null clears the fallback. */
function patched(current: PolicyShape, body: z.infer<typeof s.patchPolicyBody>) {
  return {
    name: body.name ?? current.name,
    strategy: body.strategy ?? current.strategy,
    is_default: body.is_default ?? current.is_default,
    fallback_chain: body.fallback_chain ?? current.fallback_chain,
    fallback_function: body.fallback_function === undefined ? current.fallback_function : body.fallback_function,
    config: body.config ?? current.config,
  };
}
