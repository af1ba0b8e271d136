#!/usr/bin/env node
/**
 * pricing-mcp: a local MCP server over stdio that forwards the service's four tools
 * (compute_price, verify_price, list_functions, browse_catalog) to a running instance.
 *
 * Environment: PRICING_SERVICE_URL (default http://localhost:3000), PRICING_API_KEY (optional; without
 * it the demo tenant answers), SERVICE_TIMEOUT_MS (default 30000).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createParser } from 'eventsource-parser';
import { timeoutHint } from '../plugins/mcp/services/timeout-hint';

const base = (process.env.PRICING_SERVICE_URL ?? 'http://localhost:3000').replace(/\/$/, '');
const apiKey = process.env.PRICING_API_KEY;
const timeoutMs = Number(process.env.SERVICE_TIMEOUT_MS ?? 30_000);

type Rpc = { jsonrpc: '2.0'; id?: number | string | null; method?: string; params?: Record<string, unknown>; result?: unknown; error?: { code: number; message: string; data?: unknown } };

let nextId = 1;

/**
 * A JSON-RPC error passed to the client as is. The SDK's McpError would prefix its message with
 * "MCP error <code>: ", which the client's McpError then prefixes again.
 */
class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/**
 * An HTTP-level refusal from the service (401 for a key it does not recognise, 403, 429, …) as an
 * MCP error that carries the service's own message, code and hint instead of an empty one. The body
 * is the service's error shape, or a JSON-RPC error for the transport's own refusals.
 */
function refusal(status: number, body: Record<string, unknown> | null): RpcError {
  const rpcError = body && typeof body.error === 'object' && body.error !== null ? (body.error as { code?: unknown; message?: unknown; data?: unknown }) : null;
  const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
  const message = text(rpcError?.message) ?? text(body?.error) ?? text(body?.message) ?? 'no details given';
  const hint = text(body?.hint) ?? text((rpcError?.data as { hint?: unknown } | undefined)?.hint);
  const { jsonrpc: _jsonrpc, id: _id, error: _error, ...fields } = body ?? {};
  const code = typeof rpcError?.code === 'number' ? rpcError.code : -32000;
  const data = { http_status: status, ...fields, ...(hint ? { hint } : {}), ...(rpcError?.data !== undefined && typeof rpcError.data === 'object' ? (rpcError.data as object) : {}) };
  return new RpcError(code, `The pricing service refused the request (HTTP ${status}): ${message}${hint ? ` ${hint}` : ''}`, data);
}

/** One JSON-RPC request to the service; SSE replies are read with eventsource-parser. */
async function forward(method: string, params: Record<string, unknown>, onNotification: (n: Rpc) => void, signal: AbortSignal): Promise<Rpc> {
  const id = nextId++;
  const res = await fetch(`${base}/api/mcp/rpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...(apiKey ? { 'x-api-key': apiKey } : {}) },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    signal,
  });
  const type = res.headers.get('content-type') ?? '';
  if (!type.includes('text/event-stream')) {
    const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    if (!res.ok) throw refusal(res.status, body);
    if (!body || body.jsonrpc !== '2.0') throw new RpcError(-32603, `The service answered ${res.status} without JSON-RPC.`);
    return body as Rpc;
  }
  let response: Rpc | null = null;
  const parser = createParser({
    onEvent: (event) => {
      const message = JSON.parse(event.data) as Rpc;
      if (message.id === id && (message.result !== undefined || message.error !== undefined)) response = message;
      else if (message.method) onNotification(message);
    },
  });
  const decoder = new TextDecoder();
  if (res.body) for await (const chunk of res.body as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  if (!response) throw new RpcError(-32603, 'The service closed the stream without a response.');
  return response;
}

async function call(method: string, params: Record<string, unknown>, tool: string | null, onNotification: (n: Rpc) => void): Promise<Rpc> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    return await forward(method, params, onNotification, abort.signal);
  } catch (err) {
    if (abort.signal.aborted) {
      throw new RpcError(-32001, `The pricing service did not answer within ${timeoutMs} ms.`, {
        code: 'upstream_timeout',
        retryable: true,
        timeout_ms: timeoutMs,
        tool,
        // The endpoint's own words for this tool: compute_price's retry keeps its _meta.idempotency_key, which goes on whole.
        hint: timeoutHint(tool),
        next: [],
      });
    }
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

async function main(): Promise<void> {
  const server = new Server({ name: 'pricing-mcp', version: '0.1.0' }, { capabilities: { tools: { listChanged: false } }, instructions: `Forwards pricing tools to ${base}.` });
  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const r = await call('tools/list', {}, null, () => undefined);
    if (r.error) throw new RpcError(r.error.code, r.error.message, r.error.data);
    return r.result as { tools: [] };
  });
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    // _meta goes on whole: its idempotency_key makes a retry after a timeout answer the first result, uncharged.
    const meta = request.params._meta;
    const progressToken = meta?.progressToken;
    const sent: Array<Promise<void>> = [];
    try {
      const r = await call('tools/call', { name: request.params.name, arguments: request.params.arguments ?? {}, ...(meta !== undefined ? { _meta: meta } : {}) }, request.params.name, (n) => {
        const params = n.params as { progress?: unknown; total?: unknown } | undefined;
        // The final report (progress = total) comes just before the response, which says as much: the SDK's stdio
        // client handles a notification a microtask after a response read in the same chunk, and would take it for
        // one about a finished request.
        const final = typeof params?.progress === 'number' && params.progress === params.total;
        if (n.method === 'notifications/progress' && progressToken !== undefined && !final) {
          sent.push(extra.sendNotification({ method: 'notifications/progress', params: { ...params, progressToken } as never }).catch(() => undefined));
        }
      });
      if (r.error) throw new RpcError(r.error.code, r.error.message, r.error.data);
      return r.result as never;
    } finally {
      // Progress stops once the response has gone (MCP): every notification is out, and given a moment to be read, before it.
      await Promise.all(sent);
      if (sent.length > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    }
  });
  await server.connect(new StdioServerTransport());
}

main().catch((err: unknown) => {
  process.stderr.write(`pricing-mcp: ${String(err)}\n`);
  process.exit(1);
});
