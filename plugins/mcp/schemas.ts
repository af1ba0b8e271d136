import { z } from 'zod';
import { errorBodySchema } from '../../core/errors';
import { SUPPORTED_VERSIONS } from './services/transport';

// The endpoint's messages as the OpenAPI document describes them (plugins/mcp/routes.ts declares the routes).

export const transportHeaders = z.object({
  'mcp-session-id': z.string().optional().describe('The session id the initialize response gave (optional: sessions are stateless). Malformed: 400; altered, expired or another caller\'s: 404.'),
  'mcp-protocol-version': z.string().optional().describe(`The MCP protocol version in use, one of ${SUPPORTED_VERSIONS.join(', ')}; optional (a client has none before initialize); another value: 400, on initialize too.`),
});
// Transport refusals are JSON-RPC errors with the service's fields beside them; credential refusals come from the pipeline in the common shape.
export const transportRefusal = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number(), z.null()]).describe("The request's id when one could be read; otherwise null (a body that does not parse, a batch, a notification or a client's response, a refusal before the body is read)."),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.record(z.string(), z.unknown()).optional() }),
    code: z.string().describe('Stable machine-readable code (origin_not_allowed, invalid_session_id, session_not_found, unsupported_protocol_version, invalid_json, invalid_request, not_acceptable, method_not_allowed; for a body refused while read: payload_too_large, unsupported_media_type, bad_request).'),
    hint: z.string(),
    request_id: z.string(),
  })
  .meta({ id: 'McpTransportError' });
export const refusals = {
  '4XX': {
    description:
      "A transport refusal as a JSON-RPC error (origin, session, protocol version, malformed message, method, a body not read), or in the common error shape what any route answers about the credential and the request rate before the message is read: 401, 400 bad_request for an empty x-workspace-id, 404 not_found for an x-workspace-id the credential may not act in, 403 forbidden for another site's page sending the session cookie, 429.",
    schema: z.union([transportRefusal, errorBodySchema]),
  },
};
// A JSON-RPC 2.0 response: what a tool returns is described by each tool's outputSchema (tools/list, /.well-known/mcp.json).
export const jsonRpcResponse = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number()]).describe("The request's id."),
    result: z.record(z.string(), z.unknown()).optional().describe("The method's result (a tool call's: content, structuredContent per the tool's outputSchema, isError); absent on an error."),
    error: z
      .object({ code: z.number().int(), message: z.string(), data: z.record(z.string(), z.unknown()).optional() })
      .optional()
      .describe('A JSON-RPC error (unknown method -32601, bad params -32602, timeout -32001…); absent on a result.'),
  })
  .meta({ id: 'McpResponse', description: 'A JSON-RPC 2.0 response to one request.' });
// What a POST carries, for the document only: the handler reads the raw body itself (JSON-RPC errors, not a 400 validation_error).
export const jsonRpcRequest = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z
      .union([z.string(), z.number()])
      .optional()
      .describe('Any string or number, echoed in the response; absent, the message is a notification (notifications/initialized…), accepted with 202 and no body.'),
    method: z.string().describe('initialize, ping, tools/list or tools/call (another answers the JSON-RPC error -32601).'),
    params: z
      .record(z.string(), z.unknown())
      .optional()
      .describe("The method's parameters: initialize {protocolVersion, capabilities, clientInfo}; tools/call {name, arguments, _meta: {progressToken}} (tools/list gives each tool's inputSchema)."),
  })
  .meta({ id: 'McpRequest', description: 'One JSON-RPC 2.0 message per POST; a batch (an array) is refused with the JSON-RPC error -32600.' });
