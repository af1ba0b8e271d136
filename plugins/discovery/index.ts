import type { PluginDefinition } from '../../core/plugin';
import type { RouteTable } from '../../core/http/pipeline';
import { TOKENS } from '../../core/tokens';
import type { ToolDescriptor } from './documents';
import { changelogSchema } from './migrations/0001-changelog';
import { changelogRoutes } from './routes/changelog';
import { documentRoutes } from './routes/documents';
import { Changelog } from './services/changelog';
import { Notices } from './services/notices';
import { DISCOVERY } from './tokens';

export { DISCOVERY } from './tokens';
export type { ToolDescriptor } from './documents';
export { MCP_PATH, MCP_PROTOCOL_VERSION, changelogObject, sessionRules } from './documents';
export type { Changelog, ChangelogEntry } from './services/changelog';
export type { Notices, Notice } from './services/notices';
export { buildOpenApi, openApiPath } from './openapi';

/**
 * Agent-facing documents generated from live configuration (agents.json, mcp.json, llms.txt),
 * the OpenAPI description, the changelog (database, JSON Feed, RSS, page) and response notices.
 */
export const discoveryPlugin: PluginDefinition = {
  name: 'discovery',
  description: 'Discovery documents, OpenAPI, changelog and notices.',
  dependsOn: ['identity'],
  migrations: [changelogSchema],
  async register(ctx) {
    const { config, sql, kv, events, clock, container } = ctx;
    const changelog = new Changelog(sql, kv, events, clock, ctx.publicUrl);
    await changelog.start();
    ctx.onClose(() => changelog.stop());
    const notices = new Notices(sql, changelog, clock, config);
    container.register(DISCOVERY.Changelog, { useValue: changelog });
    container.register(DISCOVERY.Notices, { useValue: notices });
    ctx.hooks.addDecorator(notices);
    const routes = container.resolve<RouteTable>(TOKENS.Routes);
    const tools = (): readonly ToolDescriptor[] => (container.isRegistered(DISCOVERY.McpTools, true) ? container.resolve<readonly ToolDescriptor[]>(DISCOVERY.McpTools) : []);
    const version = process.env.npm_package_version ?? '0.1.0';
    for (const r of [...documentRoutes({ config, routes, changelog, publicUrl: ctx.publicUrl, tools, version, clock }), ...changelogRoutes(changelog, ctx.publicUrl)]) ctx.route(r);
  },
};
