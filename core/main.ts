import 'reflect-metadata';
import { ConfigError, loadConfig, misspelledSettings } from '../config';
import type { Config } from '../config';
import { builtInPlugins } from '../plugins';
import { takeOverShutdownSignals } from './db/embedded';
import { PluginLoadError, StartupError } from './plugin';
import { migrateOnly, startService } from './service';
import { banner } from './banner';

/** What an unexpected start failure shows: its stack, else its message, else what it is (never a bare "undefined"). */
function describeFailure(err: unknown): string {
  if (err instanceof Error) return err.stack || err.message || err.name;
  if (typeof err === 'string') return err || 'an empty reason';
  if (err === undefined || err === null) return `no reason given (the failure carried ${err === null ? 'null' : 'undefined'}); run with LOG_LEVEL=debug for more`;
  try {
    return JSON.stringify(err) ?? typeof err;
  } catch {
    return typeof err;
  }
}

function fail(err: unknown): never {
  // Errors the service raises knowingly are one sentence for the operator; only unexpected ones carry a stack.
  if (err instanceof ConfigError || err instanceof PluginLoadError || err instanceof StartupError) process.stderr.write(`${err.message}\n`);
  else process.stderr.write(`Start-up failed: ${describeFailure(err)}\n`);
  process.exit(1);
}


/** A repeat of the stopping signal within this time is the same signal delivered twice, not a second request to exit at once. */
const SIGNAL_REPEAT_WINDOW_MS = 1000;

async function main(): Promise<void> {
  // Before the settings are read: a misspelt one may be why a value is refused or ignored.
  for (const { name, meant } of misspelledSettings(process.env)) {
    process.stderr.write(`Warning: ${name} is not a setting of this service and has no effect; did you mean ${meant}?\n`);
  }
  let config: Config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    fail(err);
  }
  if (process.argv.includes('--migrate')) {
    const applied = await migrateOnly(config, builtInPlugins).catch(fail);
    process.stdout.write(applied.length ? `Applied ${applied.length} migration(s):\n${applied.map((n) => `  ${n}`).join('\n')}\n` : 'Database is up to date.\n');
    return;
  }
  const service = await startService({ config, plugins: builtInPlugins }).catch(fail);
  process.stdout.write(`${banner(service.url, service.publicUrl(), config, service.plugins)}\n`);
  let stopping = false;
  let firstSignalAt = 0;
  const stop = (signal: string | null, exitCode: 0 | 1) => {
    if (stopping) {
      if (!signal) return;
      // One Ctrl-C arrives twice: from the terminal to the whole process group, and again from npm passing it on.
      if (performance.now() - firstSignalAt < SIGNAL_REPEAT_WINDOW_MS) return;
      process.stderr.write(`Second ${signal}: exiting now.\n`);
      process.exit(1);
    }
    stopping = true;
    firstSignalAt = performance.now();
    service.log.info({ signal }, 'shutting down');
    service.close().then(
      () => process.exit(exitCode),
      (err: unknown) => {
        service.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // This process stops the embedded PostgreSQL itself, after the requests in flight (see takeOverShutdownSignals).
  takeOverShutdownSignals();
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGINT', () => stop('SIGINT', 0));
  service.onFatal((err) => {
    process.stderr.write(`${err.message} Stopping the service.\n`);
    stop(null, 1);
  });
}

void main();
