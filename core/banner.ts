import type { Config } from '../config';

/** What `npm start` sets (package.json), so glibc gives large freed buffers back to the system. */
export const MMAP_THRESHOLD = '131072';

/**
 * What `npm start` prints once the service listens: its address, the public one when set, and how to get a key; on
 * Linux, when the allocator setting `npm start` makes is missing (a service started as `node dist/core/main.js`).
 */
export function banner(bound: string, url: string, config: Config, plugins: readonly string[], env: NodeJS.ProcessEnv = process.env, platform: string = process.platform): string {
  // The address it listens on first; with PUBLIC_URL set, the links below are the public ones.
  const lines = [`Pricing compute service listening on ${bound}`];
  if (url !== bound) lines.push(`  public URL: ${url} (PUBLIC_URL; links in answers use it)`);
  if (plugins.includes('health')) lines.push(`  health:    ${url}/healthz   readiness: ${url}/readyz   metrics: ${url}/metrics`);
  if (plugins.includes('identity') && config.identity.selfRegistrationOpen) {
    lines.push('  get a key (a free sandbox, no sign-up):', `    curl -s -X POST ${url}/api/agents/register -H 'content-type: application/json' -d '{"name":"my-pricing-agent"}'`);
  } else if (plugins.includes('accounts')) {
    // Self-registration closed (SELF_REGISTRATION_OPEN=false): a person signs up and creates keys.
    lines.push(`  get a key: sign up (POST ${url}/api/auth/signup), then POST ${url}/api/api-keys`);
  }
  lines.push(`  database:  ${config.database.url ? 'DATABASE_URL' : `embedded PostgreSQL in ${config.database.dataDir}`}; store: ${config.redis.url ? 'Redis' : 'in process'}`);
  if (platform === 'linux' && env.MALLOC_MMAP_THRESHOLD_ === undefined) {
    lines.push(`  memory:    set MALLOC_MMAP_THRESHOLD_=${MMAP_THRESHOLD} in the environment, as npm start does: without it, password hashing's 16 MB buffers stay with the process (about 16 MB per libuv thread; README, Performance)`);
  }
  return lines.join('\n');
}
