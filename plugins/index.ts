import type { PluginDefinition } from '../core/plugin';
import { healthPlugin } from './health';

/** Every plugin shipped with the service; configuration (PLUGINS) decides which are enabled. */
export const builtInPlugins: readonly PluginDefinition[] = [healthPlugin];
