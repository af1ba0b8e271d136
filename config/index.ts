export { loadConfig, listSettings, misspelledSettings, ConfigError } from './load';
export { renderConfigTable } from './docs';
export { settingsTree } from './schema';
export type { Config, ConfigInput } from './schema';
