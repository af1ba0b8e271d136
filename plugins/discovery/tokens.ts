export const DISCOVERY = {
  Changelog: Symbol('discovery.Changelog'),
  Notices: Symbol('discovery.Notices'),
  /** readonly ToolDescriptor[] registered by the mcp plugin (optional). */
  McpTools: Symbol('discovery.McpTools'),
} as const;
