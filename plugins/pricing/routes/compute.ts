import type { Reservation } from '../../../core/admission';
import { ApiError, errorBody, isApiError } from '../../../core/errors';
import { refuseUnstorableValue } from '../../../core/http/json-body';
import { logOutage, unavailableError } from '../../../core/http/middleware';
import { RepeatedLines } from '../../../core/repeated-lines';
import { withoutUnstorable } from '../../../core/storable-text';
import { defineRoute, ok } from '../../../core/http/route';
import type { Reply, RequestContext, RouteSpec } from '../../../core/http/route';
import { passingExample } from '../../../core/http/sent-example';
import { validationFailed, zodIssues } from '../../../core/validation';
import { credentialIgnored, REPLAYED_HEADER, requestRateOf } from '../../identity';
import { sandboxQuotaRefusal } from '../../usage';
import * as s from '../schemas';
import { batchResponse, demoPriceResponse, idempotencyHeaders, priceResponse } from '../responses';
import { callIdempotency } from '../services/compute-call';
import { keyedCall, requestKey } from './request-key';
import { marketplaceOutsidePlan } from '../services/engine-errors';
import { callExampleFor, unstorablePinExample } from './call-example';
import type { ComputeCall, ComputeResult } from '../services/compute-call';
import type { ComputeService } from '../services/compute';

/** The compute demo's words to a caller that sent a credential along, on its answers and refusals. */
const DEMO_CREDENTIAL = credentialIgnored('The demo prices every call as the keyless demo tenant and did not check the credential sent; send it to POST /api/compute/price to price as your workspace.', { method: 'POST', path: '/api/compute/price' });

interface PricedItem {
  context: Record<string, unknown>;
  function_id?: string | undefined;
  function_name?: string | undefined;
  routing_preference?: ComputeCall['preference'];
}

/**
 * The compute call of one request or batch item: who asks, on which channel, what. A batch item
 * has no arrival time of its own (its trace has no authenticate stage).
 */
function callOf(ctx: RequestContext, operation: ComputeCall['operation'], item: PricedItem, opts: { timed: boolean; idempotency?: ComputeCall['idempotency'] } = { timed: true }): ComputeCall {
  return {
    principal: ctx.principal,
    channel: ctx.channel,
    operation,
    context: item.context,
    functionId: item.function_id,
    functionName: item.function_name,
    preference: item.routing_preference,
    req: ctx.req,
    requestId: ctx.requestId,
    ...(opts.timed ? { startedAt: ctx.res.locals.startedAt as number | undefined } : {}),
    rateLimit: requestRateOf(ctx),
    idempotency: opts.idempotency,
    // The route gives a keyed call's turn back after its reply (afterReply). A batch item gives it back once priced:
    // the batch's one reply would hold every item's turn for the whole batch.
    holdTurn: opts.idempotency !== undefined && operation !== 'batch_item',
  };
}


/** An issue path of a batch item's body as a path in the batch's (`(root)` is the item itself). */
const inItem = (index: number, path: string): string => (path === '(root)' ? `items[${index}]` : `items[${index}].${path}`);

const STOCK_ITEM = s.batchExample.items[0] as { context: Record<string, unknown> };

/**
 * A batch item as priced: one that failed validation throws its own 400, whose message and issue
 * paths name it in the body (`items[2].context.current_price`), with an example item.
 */
function validItem(batchItem: s.CallSchemas['batchItem'], item: PricedItem | s.InvalidBatchItem, index: number, sent: unknown): PricedItem {
  if (!(item instanceof s.InvalidBatchItem)) {
    // Text PostgreSQL cannot store, refused in the item's place (the pipeline leaves it to the batch): the example is the item without it.
    refuseUnstorableValue(sent, 'body', () => unstorablePinExample(sent, STOCK_ITEM) ?? passingExample(batchItem, withoutUnstorable(sent)) ?? STOCK_ITEM, inItem(index, '(root)'));
    return item;
  }
  const parsed = batchItem.safeParse(item.raw);
  if (parsed.success) return parsed.data;
  const issues = zodIssues(parsed.error, item.raw).map((i) => ({ ...i, path: inItem(index, i.path) }));
  // As a single call's: the item sent with what was refused left out, where that passes (else the stock item).
  const example = passingExample(batchItem, callExampleFor(batchItem, STOCK_ITEM)(item.raw)) ?? STOCK_ITEM;
  throw validationFailed('body', issues, 'Fix the fields listed in issues; example shows a batch item that passes.', example);
}

/**
 * A batch item's refusal of its fields found past the schema (`explicit` without a function, say, or a 422 refusing a
 * value) named as the schema's are: its issue paths in the body (`items[2].function_id`), so the caller knows which item
 * to fix, and a validation message prefixed with the item.
 */
function itemNamed(err: ApiError, index: number): ApiError {
  const at = inItem(index, '(root)');
  const issues = err.extras.issues;
  if (!issues?.length || issues.every((i) => i.path.startsWith(at))) return err;
  // Any refusal's issues name the item (a 422's context.current_price too); only a validation message is prefixed, as the schema's are.
  const message = err.code !== 'validation_error' || err.message.startsWith(at) ? err.message : `${at}: ${err.message}`;
  return new ApiError(err.code, message, { ...err.extras, issues: issues.map((i) => (i.path.startsWith(at) ? i : { ...i, path: inItem(index, i.path) })) });
}


/**
 * A priced call's reply. One that reaches nobody is marked not delivered, uncharged; a replay's is
 * not (the call it repeats was answered before, and stays as recorded).
 */
function pricedReply(ctx: RequestContext, compute: ComputeService, r: ComputeResult): Reply {
  const reply = { ...ok({ ...r.body, request_id: ctx.requestId }, r.headers), ...(r.releaseTurn ? { afterReply: r.releaseTurn } : {}) };
  return r.body.idempotent_replay ? reply : { ...reply, notDelivered: () => compute.notDelivered([r.usageEventId], [r.reservation]) };
}

export function computeRoutes(compute: ComputeService, schemas: s.CallSchemas, batchMax: number, repeatIntervalMs: number): RouteSpec[] {
  // A 100-item batch in an outage fails every item alike: logged as the error handler logs outages, not a stack per item.
  const outages = new RepeatedLines(repeatIntervalMs);
  return [
    defineRoute({
      id: 'compute.price',
      recordsCallsOnly: true,
      method: 'post',
      path: '/api/compute/price',
      summary: 'Compute a price for a context; the default routing policy picks the function unless one is pinned.',
      tags: ['Pricing'],
      scopes: ['price:compute'],
      sandbox: true,
      body: schemas.computeBody,
      example: s.computeExample,
      exampleFor: callExampleFor(schemas.computeBody, s.computeExample),
      unstorableExample: (sent) => unstorablePinExample(sent, s.computeExample),
      headers: idempotencyHeaders,
      responses: { 200: { description: 'The price, who answered and how, the trace and the usage record; a retry under an answered Idempotency-Key repeats it (Idempotent-Replayed: true).', schema: priceResponse }, 403: marketplaceOutsidePlan, 429: sandboxQuotaRefusal },
      handler: async (ctx) => {
        const r = await compute.compute(callOf(ctx, 'compute', ctx.body, { timed: true, idempotency: keyedCall(ctx, 'compute.price', ctx.body) }));
        return pricedReply(ctx, compute, r);
      },
    }),
    defineRoute({
      id: 'router.price',
      recordsCallsOnly: true,
      method: 'post',
      path: '/api/price-router',
      summary: 'The price router: as compute, and also resolves function_name among built-ins, your functions and public functions.',
      tags: ['Pricing'],
      scopes: ['price:compute'],
      sandbox: true,
      body: schemas.routerBody,
      example: s.routerExample,
      exampleFor: callExampleFor(schemas.routerBody, s.routerExample),
      unstorableExample: (sent) => unstorablePinExample(sent, s.routerExample),
      headers: idempotencyHeaders,
      responses: { 200: { description: 'As POST /api/compute/price answers.', schema: priceResponse }, 403: marketplaceOutsidePlan, 429: sandboxQuotaRefusal },
      handler: async (ctx) => {
        const r = await compute.compute(callOf(ctx, 'router', ctx.body, { timed: true, idempotency: keyedCall(ctx, 'router.price', ctx.body) }));
        return pricedReply(ctx, compute, r);
      },
    }),
    defineRoute({
      id: 'compute.batch',
      recordsCallsOnly: true,
      // A batch over the body limit has a way through that no other body has: fewer items per request.
      refusal: (err) => (err.code === 'payload_too_large' && err.extras.limit ? err.with({ hint: `${err.extras.hint ?? ''} Split the items into several batches.`.trim() }) : err),
      method: 'post',
      path: '/api/compute/batch',
      summary: 'Price up to 100 items, each as one call; a failing item answers its own error inside a 200.',
      tags: ['Pricing'],
      scopes: ['price:compute'],
      body: schemas.batchBody(batchMax),
      bodyOfItems: true,
      example: s.batchExample,
      headers: idempotencyHeaders,
      responses: { 200: { description: 'Each item\'s result or error, and counts; Idempotent-Replayed: true when every item repeats an earlier run.', schema: batchResponse } },
      handler: async (ctx) => {
        // Each item is a call of its own under the batch's key and its index, claimed with the whole batch's
        // fingerprint: a retried batch replays the items already charged and prices the others.
        const key = requestKey(ctx, false);
        const batch = key === null ? undefined : callIdempotency(key, 'compute.batch', { items: ctx.body.items.map((item) => (item instanceof s.InvalidBatchItem ? item.raw : item)) });
        const sentItems = (ctx.sent as { items?: unknown[] } | undefined)?.items;
        const recorded: string[] = [];
        const settled: Array<Reservation | null> = [];
        const priceItems = () =>
          Promise.all(
            ctx.body.items.map(async (item, index) => {
              try {
                const valid = validItem(schemas.batchItem, item, index, sentItems?.[index]);
                // A space cannot occur in a key sent (printable ASCII without spaces): no single call's key is an item's.
                const idempotency = batch && { key: `${batch.key} ${index}`, fingerprint: batch.fingerprint, batchKey: batch.key };
                const r = await compute.compute(callOf(ctx, 'batch_item', valid, { timed: false, idempotency }));
                // A replayed item was answered before: a reply that reaches nobody now leaves its record as it is.
                if (!r.body.idempotent_replay) {
                  recorded.push(r.usageEventId);
                  settled.push(r.reservation);
                }
                return { index, status: 200, result: r.body };
              } catch (err) {
                // A store that failed (database, Redis) is the same retryable 503 as on a single call.
                const apiErr = isApiError(err) ? itemNamed(err, index) : (unavailableError(err) ?? new ApiError('internal_error', 'This item could not be priced.'));
                if (!isApiError(err) && !logOutage(ctx.log, outages, err, { index }, 'batch item', 'a store a batch item needed failed')) ctx.log.error({ err, index }, 'batch item failed');
                return { index, status: apiErr.status, error: errorBody(apiErr) };
              }
            }),
          );
        // The key is the batch's: held by a single call, or by this batch with another body, it refuses the whole batch.
        const results = batch && ctx.principal ? await compute.keyedBatch(ctx.principal, ctx.req, batch, priceItems) : await priceItems();
        const succeeded = results.filter((r) => r.status === 200).length;
        const replayed = results.filter((r) => r.result?.idempotent_replay).length;
        // A batch answered wholly from its first run is a replay, as a single call's would be.
        const headers = replayed === results.length ? { [REPLAYED_HEADER]: 'true' } : undefined;
        return {
          ...ok({ object: 'batch', items: results, summary: { total: results.length, succeeded, failed: results.length - succeeded, replayed }, request_id: ctx.requestId }, headers),
          notDelivered: () => compute.notDelivered(recorded, settled),
        };
      },
    }),
    defineRoute({
      id: 'demo.compute',
      recordsCallsOnly: true,
      method: 'post',
      path: '/api/public/compute/demo',
      summary: 'Keyless demo pricing with built-in functions, on the demo tenant, within an hourly budget per caller address.',
      tags: ['Public demo'],
      // SPEC: a GET (a link followed, a browser) answers 405 with Allow: POST and a hint; declared, so OpenAPI shows it.
      missingMethods: { get: { hint: 'Use POST on this path; example is a body it takes.', example: s.demoExample } },
      auth: 'public',
      channel: 'demo',
      rateLimit: 'demo',
      body: schemas.demoBody,
      example: s.demoExample,
      exampleFor: callExampleFor(schemas.demoBody, s.demoExample),
      unstorableExample: (sent) => unstorablePinExample(sent, s.demoExample),
      responses: { 200: { description: 'A priced call on the demo tenant, charging nothing, with the hourly budget left.', schema: demoPriceResponse } },
      refusal: DEMO_CREDENTIAL.refusal,
      handler: async (ctx) => {
        // Always the demo tenant, whatever credential comes along (public routes resolve none); one that came along is
        // told so, or a mistyped key would seem to work.
        const budget = ctx.state.demoBudget as { remaining: number } | undefined;
        const ignored = DEMO_CREDENTIAL.fields(ctx.req);
        const r = await compute.compute({ ...callOf(ctx, 'demo', ctx.body), principal: null, demoBudgetLeft: budget?.remaining, credentialIgnored: ignored.credential_ignored !== undefined });
        return ok({ ...r.body, demo: true, budget: ctx.state.demoBudget, ...ignored, request_id: ctx.requestId }, r.headers);
      },
    }),
  ];
}
