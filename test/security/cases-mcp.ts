import type { SecurityCase } from '../support/security';

/** MCP routes take credentials optionally: sent credentials are checked like anywhere else. */
export const mcpSecurityCases: Record<string, SecurityCase> = {
  'mcp.post': { as: 'key', request: () => ({ path: '/api/mcp/rpc', body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } }) },
  'mcp.get': { as: 'key', request: (w) => ({ path: '/api/mcp/rpc', headers: { 'x-api-key': w.a.key, accept: 'text/event-stream' } }), okStatuses: [406] },
  'mcp.delete': { as: 'key', request: () => ({ path: '/api/mcp/rpc' }), okStatuses: [405] },
};
