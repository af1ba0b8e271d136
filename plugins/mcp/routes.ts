import JsonRpc from 'jsonrpc-lite';
import type { Request, Response } from 'express';
import type { Config } from '../../config';
import { errorBody, isApiError } from '../../core/errors';
import type { ApiError } from '../../core/errors';
import { validate } from '../../core/validation';
import type { Logger } from '../../core/logger';
import { nestedDeeperThan, refuseDeeperThan, refuseUnstorableValue, unsupportedCharset } from '../../core/http/json-body';
import { logOutage, unavailableError } from '../../core/http/middleware';
import { RepeatedLines } from '../../core/repeated-lines';
import { HANDLED, defineRoute } from '../../core/http/route';
import type { HandlerResult, RequestContext, RouteSpec } from '../../core/http/route';
import type { RouteTable } from '../../core/http/pipeline';
import { passingExample } from '../../core/http/sent-example';
import type { Changelog } from '../discovery';
import { requestRateOf } from '../identity';
import { originRefused } from '../../core/http/origin';
import { acceptsSse, openSse, prefersSse, sseEvent, LATEST_VERSION, SUPPORTED_VERSIONS } from './services/transport';
import { McpSessions } from './services/sessions';
import { jsonRpcRequest, jsonRpcResponse, refusals, transportHeaders, transportRefusal } from './schemas';
import type { ToolMetrics } from './services/tool-metrics';
import type { McpTool, ToolContext } from './tools/types';
import { withStepTools } from './services/step-tools';
import { timeoutHint } from './services/timeout-hint';

export interface McpDeps {
  config: Config;
  tools: readonly McpTool[];
  /** The REST routes, for the tools' twins (read at call time: plugins registering later add theirs). */
  routes: RouteTable;
  sessions: McpSessions;
  changelog: Changelog;
  publicUrl: () => string;
  log: Logger;
  toolMetrics: ToolMetrics;
}

type Id = string | number | null;

/** What initialize says of each tool, when this instance serves it (verify_price needs the verification plugin). */
const TOOL_WORDS: Record<string, string> = { compute_price: 'compute_price (a price for a context)', verify_price: 'verify_price (a verdict on a proposed price)' };

/** initialize's instructions, naming the tools served and no other. */
function instructionsFor(tools: readonly string[]): string {
  return `Pricing tools: ${tools.map((t) => TOOL_WORDS[t] ?? t).join(', ')}. Without a key you get the demo tenant and built-in functions within an hourly budget; send your API key (x-api-key or Authorization: Bearer) to price as your workspace. Sending Mcp-Session-Id back is optional.`;
}

function ownerOf(ctx: RequestContext): string {
  const p = ctx.principal;
  return p ? `${p.kind}:${p.keyId ?? p.personId ?? p.workspaceId}` : 'anonymous';
}

function send(res: Response, status: number, body: unknown, headers: Record<string, string> = {}): HandlerResult {
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  if (body === undefined) res.status(status).end();
  else res.status(status).json(body);
  return HANDLED;
}

/** A JSON-RPC response in the form the client's Accept asks for: SSE when it prefers text/event-stream to JSON (prefersSse). */
function answer(ctx: RequestContext, message: unknown, headers: Record<string, string> = {}): HandlerResult {
  if (!prefersSse(ctx.req)) return send(ctx.res, 200, message, headers);
  openSse(ctx.res, 200, headers);
  sseEvent(ctx.res, message);
  ctx.res.end();
  return HANDLED;
}

const rpcError = (id: Id, code: number, message: string, data?: unknown) => ({ jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } });

/** A refusal of a tool's arguments, its example made from what was sent when the tool makes one that passes (as REST's pipeline does). */
function withExampleFromSent(tool: McpTool, err: unknown, sent: unknown): unknown {
  if (!isApiError(err) || err.code !== 'validation_error' || !tool.exampleFor) return err;
  const better = passingExample(tool.input, tool.exampleFor(sent));
  return better === undefined ? err : err.with({ example: better });
}

/**
 * An HTTP-level refusal by the transport (origin, protocol version, session, malformed message, method).
 * The body is a JSON-RPC error, which MCP clients read, with the service's error fields beside it:
 * `code` (a stable string), `hint` and `request_id`. `error` stays the JSON-RPC object here. Its id is
 * the request's when it could be read, else null (JSON-RPC 2.0 §5).
 */
function refuse(ctx: RequestContext, status: number, rpcCode: number, code: string, message: string, hint: string, extra: { headers?: Record<string, string>; data?: Record<string, unknown>; id?: Id } = {}): HandlerResult {
  const body = { ...rpcError(extra.id ?? null, rpcCode, message, { code, hint, ...extra.data }), code, hint, request_id: ctx.requestId };
  return send(ctx.res, status, body, extra.headers);
}

const ID_STAND_IN = '\u0000odd-id';

/** The levels a tools/call message opens above its arguments: the message and params. */
const ENVELOPE_DEPTH = 2;

/**
 * The id a refusal of a parsed message may echo: a request's string or number; never a response's, whose id is one
 * of ours, which the client could mistake for one of its own pending requests.
 */
function requestIdOf(message: unknown): Id {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return null;
  const m = message as Record<string, unknown>;
  if (!('method' in m) && ('result' in m || 'error' in m)) return null;
  return typeof m.id === 'string' || (typeof m.id === 'number' && Number.isFinite(m.id)) ? m.id : null;
}

/**
 * The methods the endpoint takes (DELETE answers 405: sessions are stateless). HEAD is GET without
 * the body, as Express serves it, so it is listed as core's 405 lists it beside a GET.
 */
const ALLOW = 'GET, POST, HEAD';

export function mcpRoutes(d: McpDeps): RouteSpec[] {
  // A tool failing for a store's outage is logged as the error handler logs outages: once per reason and interval.
  const outages = new RepeatedLines(d.config.log.repeatIntervalMs);
  const byName = new Map(d.tools.map((t) => [t.descriptor.name, t]));
  const instructions = instructionsFor([...byName.keys()]);
  const ownOrigin = () => new URL(d.publicUrl()).origin;

  /**
   * Every method, before the credential is read: a page of another site gets 403 whatever it sends
   * (DNS rebinding). Methods the endpoint has no route for get the transport's own answers too: a
   * JSON-RPC 405, and OPTIONS its Allow.
   */
  const screenOrigin = (ctx: RequestContext): HandlerResult | undefined => {
    if (originRefused(ctx.req, d.config.mcp.allowedOrigins, ownOrigin())) {
      return refuse(ctx, 403, -32000, 'origin_not_allowed', 'Forbidden: requests from pages of other origins are refused.', 'Call the MCP endpoint from your server or agent, or ask for your origin to be allowed (MCP_ALLOWED_ORIGINS).');
    }
    const method = ctx.req.method;
    if (method === 'OPTIONS') return send(ctx.res, 204, undefined, { Allow: `${ALLOW}, OPTIONS` });
    if (!['POST', 'GET', 'HEAD', 'DELETE'].includes(method)) {
      return refuse(ctx, 405, -32000, 'method_not_allowed', `Method not allowed: ${method}; send JSON-RPC messages with POST, and GET for the changelog stream.`, 'Use POST (or GET with Accept: text/event-stream).', {
        headers: { Allow: ALLOW },
      });
    }
    return undefined;
  };

  /** Protocol version and session checks shared by every method (the origin was screened before). Returns true when it answered. */
  const precheck = (ctx: RequestContext, res: Response, isInitialize: boolean, id: Id = null): boolean => {
    const version = ctx.req.headers['mcp-protocol-version'];
    // An empty header is no header, as an empty Mcp-Session-Id is. Checked on initialize too (SPEC): a client sends it
    // there only when re-initializing with the version it negotiated (the SDK's), which is one of these; its absence
    // is fine, and the version the body asks for is negotiated as before.
    if (typeof version === 'string' && version !== '' && !SUPPORTED_VERSIONS.includes(version)) {
      refuse(ctx, 400, -32000, 'unsupported_protocol_version', `Bad Request: Unsupported protocol version: ${version}`, `Send MCP-Protocol-Version with one of ${SUPPORTED_VERSIONS.join(', ')}, or leave it out.`, {
        data: { supported: SUPPORTED_VERSIONS },
        id,
      });
      return true;
    }
    const session = ctx.req.headers['mcp-session-id'];
    if (!isInitialize && typeof session === 'string' && session !== '') {
      // SPEC: a malformed id is a bad request (400); a well-formed one that was altered, expired or issued to someone else is not found (404).
      if (!McpSessions.wellFormed(session)) {
        refuse(ctx, 400, -32000, 'invalid_session_id', 'Bad Request: invalid session id format.', 'Send the Mcp-Session-Id the initialize response gave you unchanged, or leave the header out: sessions are optional.', { id });
        return true;
      }
      const reason = d.sessions.check(session, ownerOf(ctx));
      if (reason !== 'ok') {
        refuse(ctx, 404, -32000, 'session_not_found', `Session not found (${reason}): send initialize again, or continue without Mcp-Session-Id.`, 'Send initialize for a new session id, or continue without Mcp-Session-Id: sessions are optional.', {
          data: { reason },
          id,
        });
        return true;
      }
    }
    return false;
  };

  const callTool = async (ctx: RequestContext, res: Response, id: Id, params: Record<string, unknown>): Promise<HandlerResult> => {
    const name = typeof params.name === 'string' ? params.name : '';
    const tool = byName.get(name);
    const began = performance.now();
    const counted = (outcome: string) => d.toolMetrics.record(name, outcome, (performance.now() - began) / 1000);
    if (!tool) {
      counted('unknown_tool');
      const tools = [...byName.keys()];
      // The service's error fields beside JSON-RPC's, as an unknown method has them.
      return answer(
        ctx,
        rpcError(id, -32602, name === '' ? 'Invalid params: tools/call needs params.name, the tool to call.' : `Unknown tool: ${name}`, {
          code: name === '' ? 'validation_error' : 'unknown_tool',
          hint: `Call one of the tools tools/list gives (${tools.join(', ')}) by its name in params.name, with its arguments in params.arguments.`,
          request_id: ctx.requestId,
          tools,
        }),
      );
    }
    const meta = (params._meta ?? {}) as Record<string, unknown>;
    // MCP's progress token is a string or an integer; anything else is no token (nothing to echo back).
    const token = meta.progressToken;
    const progressToken = typeof token === 'string' || (typeof token === 'number' && Number.isInteger(token)) ? token : undefined;
    // A progress token asks for notifications before the response, which only a stream carries: unless the client's
    // Accept rules a stream out (JSON only), then it gets the response alone.
    const streaming = prefersSse(ctx.req) || (progressToken !== undefined && acceptsSse(ctx.req));
    if (streaming) openSse(res);
    let done = false;
    let sent = -1;
    // Progress must increase: a report that does not is dropped.
    const progress = (value: number, total: number, message: string) => {
      if (!streaming || progressToken === undefined || done || value <= sent) return;
      sent = value;
      sseEvent(res, { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken, progress: value, total, message } });
    };
    if (progressToken !== undefined) progress(0, 1, `started ${name}`);
    const reply = (message: unknown) => {
      done = true;
      if (streaming) {
        sseEvent(res, message);
        res.end();
        return HANDLED;
      }
      return send(res, 200, message);
    };
    const startedAt = ctx.res.locals.startedAt as number | undefined;
    const toolCtx: ToolContext = {
      principal: ctx.principal,
      req: ctx.req,
      requestId: ctx.requestId,
      clientIp: ctx.clientIp,
      rateLimit: requestRateOf(ctx),
      progress,
      ...(startedAt !== undefined ? { startedAt } : {}),
      ...(meta.idempotency_key !== undefined ? { idempotencyKey: meta.idempotency_key } : {}),
    };
    const failed = (err: unknown) => {
      // A store that failed (database, Redis) is the same retryable 503 body as on REST.
      const known = isApiError(err) ? err : unavailableError(err);
      const failure = known ? errorBody(known, ctx.requestId) : { error: 'The tool failed on our side.', code: 'internal_error', request_id: ctx.requestId };
      // A keyless call spent its demo budget whatever the outcome: its refusal reports the budget too, as REST's headers do.
      const body = withStepTools(toolCtx.demoBudget ? { ...failure, budget: toolCtx.demoBudget } : failure, d.tools, d.routes, ctx.principal !== null);
      if (!isApiError(err) && !logOutage(d.log, outages, err, { tool: name }, `tool ${name}`, 'a store an MCP tool needed failed')) d.log.error({ err, tool: name }, 'MCP tool failed');
      counted(typeof body.code === 'string' ? body.code : 'internal_error');
      return reply({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: JSON.stringify(body) }], isError: true } });
    };
    let args: unknown;
    try {
      // Admission before validation, as on REST: invalid keyless calls spend the demo budget too.
      await tool.admit?.(toolCtx);
      // BODY_MAX_DEPTH counts from the arguments, as REST counts from its body. With the stock example: one made from
      // what was sent would keep the value too deep.
      refuseDeeperThan(params.arguments, d.config.server.bodyMaxDepth, 'arguments', tool.example);
    } catch (err) {
      return failed(err);
    }
    try {
      args = validate(tool.input, params.arguments ?? {}, {
        where: 'arguments',
        hint: `Fix the arguments listed in issues; tools/list gives the inputSchema of ${name}${tool.example !== undefined ? ', and example shows arguments that pass' : ''}.`,
        ...(tool.example !== undefined ? { example: tool.example } : {}),
      });
      // MCP reads its own body: the text REST refuses at the door is refused here, by path.
      refuseUnstorableValue(params.arguments, 'arguments');
    } catch (err) {
      return failed(withExampleFromSent(tool, err, params.arguments ?? {}));
    }
    const timeoutMs = d.config.limits.mcp.toolTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    try {
      const work = tool.run(args, toolCtx);
      work.catch(() => undefined);
      const outcome = await Promise.race([work, timeout]);
      if (outcome === 'timeout') {
        counted('upstream_timeout');
        return reply(
          rpcError(id, -32001, `Tool ${name} timed out after ${timeoutMs} ms.`, {
            code: 'upstream_timeout',
            retryable: true,
            timeout_ms: timeoutMs,
            tool: name,
            hint: timeoutHint(name),
            next: [],
            request_id: ctx.requestId,
          }),
        );
      }
      if (progressToken !== undefined) progress(1, 1, 'done');
      counted('ok');
      const result = withStepTools(outcome, d.tools, d.routes, ctx.principal !== null);
      return reply({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result, isError: false } });
    } catch (err) {
      return failed(err);
    } finally {
      clearTimeout(timer);
    }
  };

  const post = async (ctx: RequestContext): Promise<HandlerResult> => {
    const { req, res } = ctx;
    // Read as UTF-8, a body in another charset would be priced and charged mangled: refused as REST refuses it.
    const charset = unsupportedCharset(req);
    if (charset) return bodyRefused(charset, ctx);
    const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    let message: unknown;
    try {
      message = JSON.parse(raw) as unknown;
    } catch {
      if (precheck(ctx, res, false)) return HANDLED;
      return refuse(ctx, 400, -32700, 'invalid_json', 'Parse error: the body is not JSON.', 'Send one JSON-RPC 2.0 message as JSON, e.g. {"jsonrpc":"2.0","id":1,"method":"tools/list"}.');
    }
    // A tool's arguments may nest BODY_MAX_DEPTH levels, counted from them (callTool, which refuses deeper ones by path).
    // What follows walks the message recursively (validation, JSON.stringify), so a message deeper than the envelope and
    // twice the limit is refused whole first, as no request; JSON.parse copes with any depth, so its id is still read.
    const maxDepth = d.config.server.bodyMaxDepth;
    const outerDepth = 2 * maxDepth + ENVELOPE_DEPTH;
    if (nestedDeeperThan(raw, outerDepth)) {
      const id = requestIdOf(message);
      if (precheck(ctx, res, false, id)) return HANDLED;
      return refuse(ctx, 400, -32600, 'invalid_json', `Invalid Request: the message nests arrays and objects deeper than ${outerDepth} levels.`, `Flatten the arguments: a tool's arguments may nest arrays and objects ${maxDepth} levels deep (BODY_MAX_DEPTH).`, { id });
    }
    if (Array.isArray(message)) {
      if (precheck(ctx, res, false)) return HANDLED;
      return refuse(ctx, 400, -32600, 'invalid_request', 'Invalid Request: batches are not supported (one JSON-RPC message per POST).', 'Send each JSON-RPC message in its own POST.');
    }
    // JSON-RPC 2.0 allows any string id, "" too, and any number (MCP's RequestId is string | number), which jsonrpc-lite
    // refuses for "" and anything but a safe integer (fractions, integers beyond 2^53): it parses a stand-in, and the answer
    // carries the id as JSON read it.
    const sentId = typeof message === 'object' && message !== null ? (message as { id?: unknown }).id : undefined;
    const oddId = sentId === '' || (typeof sentId === 'number' && Number.isFinite(sentId) && !Number.isSafeInteger(sentId));
    const parsed = JsonRpc.parseObject(oddId ? { ...(message as object), id: ID_STAND_IN } : message);
    if (oddId && parsed.type === 'request') (parsed.payload as { id: Id }).id = sentId;
    const isInitialize = parsed.type === 'request' && (parsed.payload as { method: string }).method === 'initialize';
    // A refusal names the id it could read, so the client can match it to its request. Not a response's: that id
    // is one of ours, which the client could mistake for one of its own pending requests.
    const readableId = typeof sentId === 'string' || (typeof sentId === 'number' && Number.isFinite(sentId)) ? sentId : null;
    const refusalId = parsed.type === 'success' || parsed.type === 'error' ? null : readableId;
    if (precheck(ctx, res, isInitialize, refusalId)) return HANDLED;
    if (parsed.type === 'notification' || parsed.type === 'success' || parsed.type === 'error') return send(res, 202, undefined);
    if (parsed.type !== 'request') {
      return refuse(ctx, 400, -32600, 'invalid_request', 'Invalid Request: not a JSON-RPC 2.0 message.', 'A request needs "jsonrpc": "2.0", an id and a method, e.g. {"jsonrpc":"2.0","id":1,"method":"tools/list"}.', { id: refusalId });
    }
    const { id, method, params } = parsed.payload as { id: Id; method: string; params?: unknown };
    const p = (params && typeof params === 'object' ? params : {}) as Record<string, unknown>;
    switch (method) {
      case 'initialize': {
        const asked = typeof p.protocolVersion === 'string' ? p.protocolVersion : LATEST_VERSION;
        const result = {
          protocolVersion: SUPPORTED_VERSIONS.includes(asked) ? asked : LATEST_VERSION,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'pricing-compute', title: 'Pricing Compute Service', version: process.env.npm_package_version ?? '0.1.0' },
          instructions,
        };
        return answer(ctx, { jsonrpc: '2.0', id, result }, { 'Mcp-Session-Id': d.sessions.issue(ownerOf(ctx)) });
      }
      case 'ping':
        return answer(ctx, { jsonrpc: '2.0', id, result: {} });
      case 'tools/list':
        return answer(ctx, {
          jsonrpc: '2.0',
          id,
          result: { tools: d.tools.map((t) => ({ name: t.descriptor.name, title: t.descriptor.title, description: t.descriptor.description, inputSchema: t.descriptor.inputSchema, ...(t.descriptor.outputSchema ? { outputSchema: t.descriptor.outputSchema } : {}), annotations: t.descriptor.annotations })) },
        });
      case 'tools/call':
        return callTool(ctx, res, id, p);
      default:
        return answer(
          ctx,
          rpcError(id, -32601, `Method not found: ${method}`, {
            code: 'method_not_found',
            hint: 'This endpoint answers initialize, ping, tools/list and tools/call; notifications (no id) are accepted with 202.',
            request_id: ctx.requestId,
          }),
        );
    }
  };

  /** A body the reader refused (too large, undecodable, cut short, in a charset other than UTF-8) is refused as a body that does not parse is: a JSON-RPC error. */
  const bodyRefused = (err: ApiError, ctx: RequestContext): HandlerResult => {
    if (precheck(ctx, ctx.res, false)) return HANDLED;
    if (err.code === 'invalid_json') return refuse(ctx, err.status, -32700, err.code, `Parse error: ${err.message}`, 'Send one JSON-RPC 2.0 message as JSON, uncompressed or compressed whole with the Content-Encoding you name.');
    // The reader's hint for a body too large speaks of REST's batches; here the arguments are what to shrink.
    const limit = (err.extras.limit as { body_bytes?: number } | undefined)?.body_bytes;
    const hint = limit !== undefined ? `Send at most ${limit} bytes: one JSON-RPC message per POST, with smaller arguments (compute_price takes one context; REST's POST /api/compute/batch prices up to 100).` : (err.extras.hint ?? 'Send one JSON-RPC 2.0 message as JSON.');
    return refuse(ctx, err.status, -32000, err.code, err.message, hint, { data: err.extras.limit ? { limit: err.extras.limit } : {} });
  };

  const get = (ctx: RequestContext): HandlerResult => {
    const { req, res } = ctx;
    if (precheck(ctx, res, false)) return HANDLED;
    if (!acceptsSse(req)) {
      return refuse(ctx, 406, -32000, 'not_acceptable', 'Not Acceptable: GET needs Accept: text/event-stream.', 'GET answers only an SSE stream of changelog notices; send JSON-RPC messages with POST.');
    }
    const entries = d.changelog
      .forAgents()
      .slice(0, 3)
      .map((e) => ({ id: e.id, date: e.date, title: e.title, summary: e.summary, link: e.link }));
    openSse(res);
    // Reconnect no sooner than five minutes: there is nothing else on this stream.
    res.write('retry: 300000\n\n');
    sseEvent(res, { jsonrpc: '2.0', method: 'notifications/service/changelog', params: { entries, hint: 'No other messages come on this stream; come back in five minutes for new entries.' } }, `changelog-${entries[0]?.id ?? 'none'}`);
    res.end();
    return HANDLED;
  };

  const common = { tags: ['MCP'], auth: 'optional' as const, channel: 'mcp' as const, sandbox: true, screen: screenOrigin, headers: transportHeaders, responses: refusals };
  return [
    defineRoute({
      id: 'mcp.post',
      method: 'post',
      path: '/api/mcp/rpc',
      summary: 'MCP (Streamable HTTP 2025-11-25): one JSON-RPC message per POST; JSON reply, or SSE when asked or when a tool call carries a progress token.',
      ...common,
      // initialize, tools/list and the catalogue tools read; compute_price and verify_price refuse a read-only account themselves.
      authorizesEachOperation: true,
      rawBody: true,
      answerBodyRefusal: bodyRefused,
      consumes: ['application/json'],
      rawBodyFields: jsonRpcRequest,
      produces: ['application/json', 'text/event-stream'],
      responses: {
        ...refusals,
        200: { description: 'A request\'s JSON-RPC response; as text/event-stream (when asked for, or a tool call carries a progress token and Accept allows a stream) its progress notifications, then the response.', schema: jsonRpcResponse },
        202: { description: 'A notification, or a response the client sends: accepted, no body.', noBody: true },
      },
      handler: post,
    }),
    defineRoute({
      id: 'mcp.get',
      method: 'get',
      path: '/api/mcp/rpc',
      summary: 'MCP GET stream (Accept: text/event-stream): up to three newest agent changelog entries, then the stream closes.',
      ...common,
      produces: ['text/event-stream'],
      responses: { ...refusals, 200: { description: 'An event stream: up to three newest agent changelog entries as notifications (retry: 300000), then it closes.' } },
      handler: get,
    }),
    defineRoute({
      id: 'mcp.delete',
      method: 'delete',
      path: '/api/mcp/rpc',
      summary: 'Ending a session: 405 (sessions are stateless and simply expire).',
      ...common,
      responses: { ...refusals, 405: { description: 'Always: sessions are stateless and simply expire, so there is nothing to end.', schema: transportRefusal } },
      handler: (ctx) =>
        refuse(ctx, 405, -32000, 'method_not_allowed', 'Method not allowed: sessions are stateless; just stop sending the id.', 'Stop sending Mcp-Session-Id to end a session; it also expires by itself.', {
          headers: { Allow: ALLOW },
        }),
    }),
  ];
}

export type { Request };
