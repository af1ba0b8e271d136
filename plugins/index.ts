import type { PluginDefinition } from '../core/plugin';
import { healthPlugin } from './health';
import { identityPlugin } from './identity';
import { accountsPlugin } from './accounts';
import { usagePlugin } from './usage';
import { pricingPlugin } from './pricing';
import { teamPlugin } from './team';
import { discoveryPlugin } from './discovery';
import { mcpPlugin } from './mcp';
import { verificationPlugin } from './verification';
import { catalogPlugin } from './catalog';

/** Every plugin shipped with the service; configuration (PLUGINS) decides which are enabled. */
export const builtInPlugins: readonly PluginDefinition[] = [healthPlugin, identityPlugin, accountsPlugin, usagePlugin, pricingPlugin, teamPlugin, discoveryPlugin, mcpPlugin, verificationPlugin, catalogPlugin];
