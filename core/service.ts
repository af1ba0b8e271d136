import 'reflect-metadata';
import { createServer, maxHeaderSize } from 'node:http';
import { PARSER_REFUSAL_CODES, clientErrorHandler } from './http/client-error';
import { setFlagsFromString } from 'node:v8';
import type { Server, ServerResponse } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { Express, Router } from 'express';
import { container as rootContainer } from 'tsyringe';
import type { DependencyContainer } from 'tsyringe';
import type { Sequelize } from 'sequelize';
import type { DestinationStream } from 'pino';
import type { Config } from '../config';
import { clientIp } from './address';
import { systemClock } from './clock';
import type { Clock } from './clock';
import { settlesWithin, withTimeout } from './deadline';
import { createHotPool, createSequelize, pingDatabase } from './db/database';
import { EMBEDDED_MAX_CONNECTIONS, startEmbeddedPostgres } from './db/embedded';
import type { EmbeddedDatabase } from './db/embedded';
import { runMigrations } from './db/migrations';
import { Sql } from './db/sql';
import { EventBus } from './events';
import { Hooks } from './hooks';
import { errorHandler, notFound, refuseWhileStopping, requestContext } from './http/middleware';
import { appMessageClasses, dispatchDirect, targetPath } from './http/direct-dispatch';
import { RouteTable, mountRoutes } from './http/pipeline';
import { authRefusal, createKvStore, RedisKvStore } from './kv';
import type { KvStore } from './kv';
import { createLogger, failureFields } from './logger';
import type { Logger } from './logger';
import { Metrics } from './metrics';
import { OnceEvent } from './once';
import { StartupError, resolvePluginOrder } from './plugin';
import type { PluginContext, PluginDefinition, ReadinessCheck } from './plugin';
import { TOKENS } from './tokens';

export interface ServiceOptions {
  config: Config;
  /** Every plugin the service knows; `config.plugins.enabled` picks among them. */
  plugins: readonly PluginDefinition[];
  clock?: Clock;
  logDestination?: DestinationStream;
}

export interface Service {
  readonly url: string;
  readonly config: Config;
  readonly app: Express;
  /** The router holding every declared route (walked by the OpenAPI coverage test). */
  readonly router: Router;
  readonly server: Server;
  readonly container: DependencyContainer;
  readonly sequelize: Sequelize;
  readonly kv: KvStore;
  readonly metrics: Metrics;
  readonly hooks: Hooks;
  readonly events: EventBus;
  readonly routes: RouteTable;
  readonly log: Logger;
  readonly clock: Clock;
  readonly plugins: readonly string[];
  readonly readiness: ReadonlyMap<string, ReadinessCheck>;
  readonly publicUrl: () => string;
  /** Graceful shutdown: refuse new requests, finish in-flight ones, close everything. */
  readonly close: () => Promise<void>;
  /**
   * Calls `listener` once when the service can no longer work and will not recover on its own (its
   * embedded PostgreSQL died); the entry point shuts down and exits non-zero so a supervisor restarts it.
   */
  readonly onFatal: (listener: (err: Error) => void) => void;
}

const PLUGIN_REGISTER_TIMEOUT_MS = 30_000;

/** The second pool's size (the usage writer and observation reads), beside DB_POOL_MAX's. */
const hotPoolMax = (poolMax: number): number => Math.max(2, Math.ceil(poolMax / 2));

/** The most connections one instance opens: both pools full. */
export const connectionsPerInstance = (poolMax: number): number => poolMax + hotPoolMax(poolMax);

/** Resolves the database URL, starting the embedded PostgreSQL when none is configured. */
export async function openDatabase(config: Config, log: Logger): Promise<{ url: string; embedded: EmbeddedDatabase | null }> {
  if (config.database.url) return { url: config.database.url, embedded: null };
  // The cluster takes every connection this instance may open (both pools), with room for a psql session and migrations.
  const maxConnections = Math.max(EMBEDDED_MAX_CONNECTIONS, connectionsPerInstance(config.database.poolMax) + 20);
  const embedded = await startEmbeddedPostgres(config.database.dataDir, config.database.embeddedPort, log, maxConnections, config.database.embeddedStopTimeoutMs);
  return { url: embedded.url, embedded };
}

/** Starts one service instance: database, store, plugins, routes, HTTP server. */
export async function startService(opts: ServiceOptions): Promise<Service> {
  const { config } = opts;
  // V8 reads this flag at each full collection, so setting it now still bounds the heap's growth.
  if (config.server.heapGrowingPercent > 0) setFlagsFromString(`--heap-growing-percent=${config.server.heapGrowingPercent}`);
  const clock = opts.clock ?? systemClock;
  const log = createLogger(config.log.level, opts.logDestination);
  const order = resolvePluginOrder(opts.plugins, config.plugins.enabled);

  const cleanups: Array<() => Promise<void>> = [];
  // A pool's close waits for the server to answer each connection's goodbye: a paused server never does.
  const closeWithin = async (what: string, closing: Promise<unknown>) => {
    if (!(await settlesWithin(closing, config.database.closeTimeoutMs))) {
      log.warn({ pool: what, timeoutMs: config.database.closeTimeoutMs }, 'database connections did not close within DB_CLOSE_TIMEOUT_MS: stopping without them');
    }
  };
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => log.error({ err }, 'cleanup failed'));
  };

  try {
    const db = await openDatabase(config, log);
    const embedded = db.embedded;
    const fatal = new OnceEvent<Error>();
    if (embedded) {
      cleanups.push(() => embedded.stop());
      embedded.onUnexpectedExit((exit) => fatal.fire(new Error(`The embedded PostgreSQL exited unexpectedly (${exit.signal ?? `exit code ${String(exit.code)}`}); nothing restarts it.`)));
    }
    const { statementTimeoutMs, answerGraceMs, connectTimeoutMs, acquireTimeoutMs } = config.database;
    const timeouts = { statementTimeoutMs, answerGraceMs, connectTimeoutMs, acquireTimeoutMs };
    const sequelize = createSequelize({ url: db.url, poolMax: config.database.poolMax, ...timeouts }, log);
    cleanups.push(() => closeWithin('the main database pool', sequelize.close()));
    await sequelize.authenticate().catch((err: unknown) => {
      throw db.embedded ? err : new StartupError(`The database named by DATABASE_URL (${databaseAddress(db.url)}) could not be reached: ${(err as Error).message}. Check that PostgreSQL runs there and that DATABASE_URL (user, password, database) is right.`);
    });
    await runMigrations(
      sequelize,
      db.url,
      order.map((p) => ({ plugin: p.name, migrations: p.migrations ?? [] })),
      log,
    );

    const kv = createKvStore(config.redis.url, config.redis.keyPrefix, clock, log.child({ component: 'kv' }), { commandTimeoutMs: config.redis.commandTimeoutMs, failureLogIntervalMs: config.log.repeatIntervalMs });
    cleanups.push(() => kv.close());
    // Commands are not queued while the first connection is made (core/kv/redis.ts). Without Redis at
    // start the key cache could not hear revocations from other instances: the start fails, to be retried.
    if (kv instanceof RedisKvStore && !(await kv.connected(config.redis.connectWaitMs))) {
      const database = kv.databaseError;
      if (database !== null) throw new StartupError(`Redis at REDIS_URL refused the database number in its path (${database}); name one the server has in REDIS_URL (redis://host:port/0 up to its databases setting less one, /15 by default), since starting again will not help.`);
      const why = kv.connectionError;
      const refused = why === null ? null : authRefusal(why);
      if (refused === 'credentials') throw new StartupError(`Redis at REDIS_URL refused the credentials it was given (${why}); check the user and password in REDIS_URL (redis://user:password@host:port), since starting again with the same ones will not help.`);
      if (refused === 'permission') throw new StartupError(`Redis at REDIS_URL accepted the user but refused it a command (${why}); let that user run what the service sends (reads and writes on its keys under REDIS_KEY_PREFIX, Lua scripts, publish and subscribe, INFO and PING), since starting again will not help.`);
      throw new StartupError(`Redis at REDIS_URL was not ready within REDIS_CONNECT_WAIT_MS (${config.redis.connectWaitMs} ms)${why ? ` (${why})` : ''}; start the service again once it is reachable.`);
    }
    const metrics = new Metrics();
    const hooks = new Hooks();
    const events = new EventBus(log);
    const routes = new RouteTable();
    const container = rootContainer.createChildContainer();
    container.register(TOKENS.Config, { useValue: config });
    container.register(TOKENS.Logger, { useValue: log });
    container.register(TOKENS.Sequelize, { useValue: sequelize });
    const sql = new Sql(sequelize);
    container.register(TOKENS.Sql, { useValue: sql });
    // Its statements wait no longer than those of every other session (a locked table kept callers 24 s).
    const pgPool = createHotPool({ url: db.url, max: hotPoolMax(config.database.poolMax), applicationName: 'pricing-compute-hot', ...timeouts });
    // An expected failure (a restart, an administrator, a lost network): the reason and code, not the driver's stack.
    pgPool.on('error', (err) => log.warn(failureFields(err), 'idle database connection failed'));
    cleanups.push(() => closeWithin('the hot database pool', pgPool.end()));
    container.register(TOKENS.PgPool, { useValue: pgPool });
    container.register(TOKENS.Kv, { useValue: kv });
    container.register(TOKENS.Metrics, { useValue: metrics });
    container.register(TOKENS.Clock, { useValue: clock });
    container.register(TOKENS.Events, { useValue: events });
    container.register(TOKENS.Hooks, { useValue: hooks });
    container.register(TOKENS.Routes, { useValue: routes });

    const readiness = new Map<string, ReadinessCheck>();
    readiness.set('database', () => pingDatabase(sequelize, pgPool));
    if (kv.kind === 'redis') readiness.set('redis', () => kv.ping());
    container.register(TOKENS.Readiness, { useValue: readiness });
    const starters: Array<() => Promise<void> | void> = [];
    const closers: Array<{ plugin: string; fn: () => Promise<void> | void }> = [];
    let boundUrl = '';
    const publicUrl = (): string => (config.server.publicUrl ?? boundUrl).replace(/\/$/, '');

    for (const plugin of order) {
      const ctx: PluginContext = {
        name: plugin.name,
        config,
        container,
        log: log.child({ plugin: plugin.name }),
        sequelize,
        sql,
        kv,
        metrics,
        clock,
        events,
        hooks,
        route: (spec) => routes.add(plugin.name, spec),
        readiness: (name, check) => readiness.set(name, check),
        publicUrl,
        onStart: (fn) => starters.push(fn),
        onClose: (fn) => closers.push({ plugin: plugin.name, fn }),
      };
      await withTimeout(`Plugin "${plugin.name}" registration`, PLUGIN_REGISTER_TIMEOUT_MS, Promise.resolve(plugin.register(ctx)));
    }
    cleanups.push(async () => {
      for (const { plugin, fn } of [...closers].reverse()) {
        try {
          await fn();
        } catch (err) {
          log.error({ err, plugin }, 'plugin close failed');
        }
      }
    });

    let stopping = false;
    const app = express();
    app.disable('x-powered-by');
    app.disable('etag');
    app.set('trust proxy', config.server.trustProxy);
    const leading = [requestContext(log, metrics), refuseWhileStopping(() => stopping)];
    for (const m of leading) app.use(m);
    const router = express.Router();
    const direct = mountRoutes(router, routes, { hooks, log, bodyLimitBytes: config.server.bodyLimitBytes, bodyMaxDepth: config.server.bodyMaxDepth });
    app.use(direct.middleware);
    app.use(router);
    // Steps and hints name only what is served and open now (paused self-registration is served, and closed).
    app.use(notFound((method, path) => routes.offers(method, path)));
    // A refusal is made for one caller: a route closed to its address (registrations spent) is not offered to it.
    const onError = errorHandler(log, (method, path, req) => routes.offers(method, path, req ? clientIp(req) : undefined), () => publicUrl(), { repeatIntervalMs: config.log.repeatIntervalMs });
    app.use(onError);

    const inFlight = new Set<ServerResponse>();
    const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs, maxConnections } = config.server;
    if (headersTimeoutMs > requestTimeoutMs) throw new StartupError(`HEADERS_TIMEOUT_MS (${headersTimeoutMs}) is above REQUEST_TIMEOUT_MS (${requestTimeoutMs}): the whole request cannot take less time than its headers. Raise REQUEST_TIMEOUT_MS or lower HEADERS_TIMEOUT_MS.`);
    const server = createServer({
      ...appMessageClasses(app),
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      // How often Node looks for requests past those limits (its default, 30 s, would let them run half a minute over).
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(headersTimeoutMs / 4))),
    }, (req, res) => {
      inFlight.add(res);
      res.on('close', () => {
        inFlight.delete(res);
      });
      // Past the stop, every answer closes its connection: a kept-alive one would be reused for a
      // request the closing server resets, where it would have been refused 503 shutting_down.
      if (stopping) res.shouldKeepAlive = false;
      // The common routes skip the application router's walk; everything else goes through Express.
      const stages = direct.lookup(req.method, targetPath(req.url));
      if (stages) dispatchDirect(app, req, res, leading, stages, onError);
      else app(req, res);
    });
    // Never seen by a route, so not in http_request_duration_seconds: a burst of malformed requests is counted apart.
    const unparsed = metrics.counter({ name: 'http_requests_refused_by_parser_total', help: "Requests Node's HTTP parser refused before any route saw them, by the error code answered.", labelNames: ['code'] });
    for (const code of PARSER_REFUSAL_CODES) unparsed.inc({ code }, 0);
    server.on('clientError', clientErrorHandler(maxHeaderSize, log, (code) => unparsed.inc({ code })));
    server.keepAliveTimeout = keepAliveTimeoutMs;
    if (maxConnections > 0) {
      server.maxConnections = maxConnections;
      const dropped = metrics.counter({ name: 'http_connections_dropped_total', help: 'Client connections closed unanswered because MAX_CONNECTIONS were open.' });
      server.on('drop', () => dropped.inc());
    }
    await new Promise<void>((resolve, reject) => {
      const refused = (err: Error) => reject(new StartupError(`The HTTP server could not listen on HOST ${config.server.host}, PORT ${config.server.port}: ${err.message}.`));
      server.once('error', refused);
      server.listen(config.server.port, config.server.host, () => {
        server.off('error', refused);
        resolve();
      });
    });
    const addr = server.address() as AddressInfo;
    const host = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;
    boundUrl = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;

    for (const fn of starters) await fn();
    await events.emit('service.started', { url: boundUrl });
    log.info({ url: boundUrl, plugins: order.map((p) => p.name), database: db.embedded ? 'embedded' : 'external', kv: kv.kind }, 'service listening');

    let closing: Promise<void> | null = null;
    const close = (): Promise<void> => {
      closing ??= (async () => {
        stopping = true;
        // Answers still to be written close their connections instead of keeping them alive for reuse.
        for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
        await events.emit('service.stopping', {});
        // Stop listening but keep idle kept-alive connections for a grace: a busy client's next request may already
        // sit unread in one, and closing it then resets the request (did it run?) where it would be refused 503
        // shutting_down. (http's close() would close them at once; the listener alone is net's.)
        const closed = new Promise<void>((resolve) => NetServer.prototype.close.call(server, () => resolve()));
        const deadline = Date.now() + config.server.shutdownTimeoutMs;
        const graceEnds = Math.min(deadline, Date.now() + config.server.shutdownIdleGraceMs);
        while (Date.now() < graceEnds && (await openConnections(server)) > 0) await new Promise((r) => setTimeout(r, 10));
        // Now http's close: idle connections close (the listener is already closed) and its timeout checks stop.
        server.close();
        while (inFlight.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        if (inFlight.size > 0) log.warn({ inFlight: inFlight.size }, 'shutdown deadline reached; closing remaining connections');
        server.closeAllConnections();
        await closed;
        await cleanup();
        log.info('service stopped');
      })();
      return closing;
    };

    return {
      url: boundUrl,
      config,
      app,
      router,
      server,
      container,
      sequelize,
      kv,
      metrics,
      hooks,
      events,
      routes,
      log,
      clock,
      plugins: order.map((p) => p.name),
      readiness,
      publicUrl,
      close,
      onFatal: (listener) => fatal.on(listener),
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** Runs the migrations of the enabled plugins and stops (npm run migrate). */
export async function migrateOnly(config: Config, plugins: readonly PluginDefinition[]): Promise<string[]> {
  const log = createLogger(config.log.level);
  const order = resolvePluginOrder(plugins, config.plugins.enabled);
  const db = await openDatabase(config, log);
  const sequelize = createSequelize({ url: db.url, poolMax: 2, statementTimeoutMs: 0 }, log);
  try {
    return await runMigrations(
      sequelize,
      db.url,
      order.map((p) => ({ plugin: p.name, migrations: p.migrations ?? [] })),
      log,
    );
  } finally {
    await sequelize.close();
    await db.embedded?.stop();
  }
}

/** host:port of a database URL, for messages (never its user or password). */
function databaseAddress(url: string): string {
  try {
    const u = new URL(url);
    // A unix socket is named in the query (postgresql:///db?host=/run/postgresql).
    const host = u.hostname || u.searchParams.get('host') || 'localhost';
    return `${host}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return 'an unreadable URL';
  }
}

/** Client connections the server holds open (idle kept-alive ones included). */
function openConnections(server: Server): Promise<number> {
  return new Promise((resolve) => server.getConnections((err, n) => resolve(err ? 0 : n)));
}
