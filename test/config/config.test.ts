import { expect } from 'chai';
import { spawn, spawnSync } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, listSettings, loadConfig, misspelledSettings, renderConfigTable } from '../../config';

const root = path.resolve(__dirname, '../../..');

/** The first problem the configuration check finds in `env`, or undefined when it passes. */
function problem(env: Record<string, string>): string | undefined {
  try {
    loadConfig(env);
  } catch (e) {
    return (e as ConfigError).problems[0];
  }
  return undefined;
}

describe('configuration', () => {
  it('defaults every limit of SPEC\'s Limits table to SPEC\'s value', () => {
    const c = loadConfig({});
    expect(c.server.port).to.equal(3000);
    expect(c.limits.sandbox.computeCallsPerDay).to.equal(25);
    expect(c.limits.sandbox.keyLifetimeDays).to.equal(30);
    expect(c.limits.registrations).to.deep.equal({ perAddressPerDay: 5, overallPerDay: 200 });
    expect(c.limits.claimedAgentsPerWorkspace).to.equal(50);
    expect(c.limits.dayPass).to.deep.equal({ calls: 500, validHours: 24 });
    expect(c.limits.topUp.minimumUsdc).to.equal('10');
    expect(c.limits.topUp.bonusTier1Usdc).to.equal('100');
    expect(c.limits.topUp.bonusTier1Pct).to.equal(10);
    expect(c.limits.topUp.bonusTier2Usdc).to.equal('500');
    expect(c.limits.topUp.bonusTier2Pct).to.equal(20);
    expect(c.limits.perCallPremiumPct).to.equal(20);
    expect(c.limits.paymentSettleAttempts).to.equal(3);
    expect(c.limits.batchMaxItems).to.equal(100);
    expect(c.limits.mcp).to.deep.equal({ toolTimeoutMs: 30000, sessionTtlHours: 24 });
    // A call's budget ends before the MCP tool timeout (whose timer starts earlier), so hanging functions answer the 502.
    expect(c.engine.callMaxMs).to.equal(25000).and.be.below(c.limits.mcp.toolTimeoutMs);
    expect(c.limits.notices.perResponse).to.equal(3);
    expect(c.limits.notices.windowDays).to.equal(30);
    expect(c.limits.nextActionsMax).to.equal(3);
    expect(c.limits.leaderboard.minDistinctConsumers).to.equal(3);
    expect(c.limits.leaderboard.confidenceRounding).to.equal(0.05);
    expect(c.limits.marketplaceCommissionPct).to.equal(30);
    expect(c.limits.minUserAge).to.equal(18);
  });

  it('takes the usual environment names', () => {
    const c = loadConfig({ PORT: '8080', HOST: '127.0.0.1', DATABASE_URL: 'postgres://u:p@db:5432/x', REDIS_URL: 'redis://r:6379', DATA_DIR: '/var/lib/pcs', LOG_LEVEL: 'warn' });
    expect(c.server.port).to.equal(8080);
    expect(c.server.host).to.equal('127.0.0.1');
    expect(c.database.url).to.equal('postgres://u:p@db:5432/x');
    expect(c.redis.url).to.equal('redis://r:6379');
    expect(c.database.dataDir).to.equal('/var/lib/pcs');
    expect(c.log.level).to.equal('warn');
  });

  it('lets programmatic overrides win over the environment', () => {
    const c = loadConfig({ SANDBOX_COMPUTE_CALLS_PER_DAY: '40' }, { limits: { sandbox: { computeCallsPerDay: 3 } } });
    expect(c.limits.sandbox.computeCallsPerDay).to.equal(3);
    expect(loadConfig({ SANDBOX_COMPUTE_CALLS_PER_DAY: '40' }).limits.sandbox.computeCallsPerDay).to.equal(40);
  });

  it('refuses bad values, naming each setting and its environment variable', () => {
    let err: unknown;
    try {
      loadConfig({ PORT: 'eighty', LOG_LEVEL: 'chatty', TOP_UP_MINIMUM_USDC: '1e3' });
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(ConfigError);
    const message = (err as ConfigError).message;
    expect(message).to.contain('PORT (server.port)');
    expect(message).to.contain('LOG_LEVEL (log.level)');
    expect(message).to.contain('TOP_UP_MINIMUM_USDC');
    expect((err as ConfigError).problems).to.have.length(3);
  });

  it('says what a setting takes in words: a whole number, its bounds, the words a switch takes', () => {
    expect(problem({ PORT: '3.5' })).to.match(/: must be a whole number$/);
    expect(problem({ PORT: '99999' })).to.match(/: must be at most 65535$/);
    expect(problem({ ENGINE_THREADS: '-1' })).to.match(/: must be at least 0$/);
    expect(problem({ SECURE_COOKIES: '2' })).to.match(/: must be true or false \(also 1\/0, yes\/no, on\/off\)$/);
  });

  it('says a whole number too large to be kept exactly is too large, echoing it as typed rather than rounded', () => {
    expect(problem({ RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: '99999999999999999999' })).to.match(/ = "99999999999999999999" from environment variable RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: is too large: must be at most 9007199254740991$/);
    // A setting with a maximum of its own says that one.
    expect(problem({ PORT: '99999999999999999999' })).to.match(/^PORT \(server\.port\) = "99999999999999999999" from environment variable PORT: is too large: must be at most 65535$/);
    expect(problem({ ENGINE_RANDOM_SEED: '-99999999999999999999' })).to.match(/ = "-99999999999999999999" from environment variable ENGINE_RANDOM_SEED: is too small: must be at least -9007199254740991$/);
    expect(loadConfig({ RATE_LIMIT_PER_WORKSPACE_PER_MINUTE: '9007199254740991' }).limits).to.be.an('object');
  });

  it('reads TRUST_PROXY as Express means it: true/false, digits as a hop count, otherwise a list', () => {
    expect(loadConfig({}).server.trustProxy).to.deep.equal(['loopback']);
    expect(loadConfig({ TRUST_PROXY: '1' }).server.trustProxy).to.equal(1);
    expect(loadConfig({ TRUST_PROXY: ' 2 ' }).server.trustProxy).to.equal(2);
    expect(loadConfig({ TRUST_PROXY: 'true' }).server.trustProxy).to.equal(true);
    expect(loadConfig({ TRUST_PROXY: 'FALSE' }).server.trustProxy).to.equal(false);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,192.168.1.1/255.255.255.0, fd00::/8' }).server.trustProxy).to.deep.equal(['loopback', '10.0.0.0/8', '192.168.1.1/255.255.255.0', 'fd00::/8']);
  });

  it('refuses a PUBLIC_URL of another scheme than http or https (every link the service answers would carry it), and takes either', () => {
    // A query or fragment would sit inside every link made by appending a path to it.
    for (const bad of ['ftp://x.example', 'javascript:alert(1)', 'notaurl', 'https://example.com/?x=1', 'https://example.com/#f']) {
      expect(() => loadConfig({ PUBLIC_URL: bad }), bad).to.throw(ConfigError, 'PUBLIC_URL (server.publicUrl)');
    }
    expect(loadConfig({ PUBLIC_URL: 'https://pricing.example.com' }).server.publicUrl).to.equal('https://pricing.example.com');
    expect(loadConfig({ PUBLIC_URL: 'http://10.0.0.5:3000' }).server.publicUrl).to.equal('http://10.0.0.5:3000');
    expect(loadConfig({ PUBLIC_URL: 'https://example.com/pricing' }).server.publicUrl).to.equal('https://example.com/pricing');
  });

  it('refuses a TRUST_PROXY entry Express would misread as another address (1 in a list is 0.0.0.1)', () => {
    for (const bad of ['loopback,1', '10.1', '0x0a000001', '10.0.0.0/33', '[::1]', 'proxy.internal', '-1']) {
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).to.throw(ConfigError, 'TRUST_PROXY (server.trustProxy)');
    }
  });

  it('refuses a timeout or interval longer than a Node timer can wait (2^31-1 ms), naming the setting', () => {
    const timers = ['ENGINE_FUNCTION_TIMEOUT_MS', 'ENGINE_MARKET_LOOKUP_TIMEOUT_MS', 'ENGINE_MARKET_INDEX_REFRESH_MS', 'LEADERBOARD_REFRESH_MS', 'MCP_TOOL_TIMEOUT_MS', 'REDIS_COMMAND_TIMEOUT_MS'];
    for (const env of timers) {
      expect(loadConfig({ [env]: '2147483647' }), `${env} at the limit`).to.be.an('object');
      expect(() => loadConfig({ [env]: '2147483648' }), env).to.throw(ConfigError, `${env} (`);
    }
  });

  it('refuses a duration in days, hours or seconds an expiry date cannot be computed from (the claim link, session and key lifetimes), and a millisecond one no timer can wait, for every such setting', () => {
    expect(() => loadConfig({ CLAIM_LINK_TTL_DAYS: '150000000' })).to.throw(ConfigError, 'CLAIM_LINK_TTL_DAYS (identity.claimLinkTtlDays)');
    expect(() => loadConfig({ SESSION_TTL_HOURS: '3000000000' })).to.throw(ConfigError, 'SESSION_TTL_HOURS (');
    expect(() => loadConfig({ KEEP_ALIVE_TIMEOUT_MS: '3000000000' })).to.throw(ConfigError, 'KEEP_ALIVE_TIMEOUT_MS (');
    const caps: Array<[RegExp, number]> = [
      [/_MS$/, 2_147_483_647],
      [/_S$/, 3_153_600_000],
      [/_HOURS$/, 876_000],
      [/_DAYS$/, 36_500],
    ];
    let checked = 0;
    for (const { def } of listSettings()) {
      const cap = caps.find(([unit]) => unit.test(def.env))?.[1];
      if (cap === undefined || typeof def.default !== 'number') continue;
      expect(() => loadConfig({ [def.env]: String(cap + 1) }), def.env).to.throw(ConfigError, `${def.env} (`);
      checked++;
    }
    expect(checked).to.be.greaterThan(30);
  });

  it('hides secret values in the refusal', () => {
    expect(() => loadConfig({ DATABASE_URL: 'not a url at all' })).to.throw(ConfigError, 'DATABASE_URL (database.url) = (hidden)');
    expect(() => loadConfig({ DATABASE_URL: 'postgres://user:s3cret@db:5432/x/../x' })).not.to.throw();
    expect(() => loadConfig({ REDIS_URL: '' })).not.to.throw();
  });

  it('refuses a REDIS_URL that is neither a redis:// or rediss:// URL nor a socket path (foo was taken for a host name), hiding its value', () => {
    for (const bad of ['foo', 'http://127.0.0.1:6379', '127.0.0.1:6379']) {
      expect(() => loadConfig({ REDIS_URL: bad }), bad).to.throw(ConfigError, 'REDIS_URL (redis.url) = (hidden)');
    }
    expect(() => loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' })).not.to.throw();
    expect(() => loadConfig({ REDIS_URL: 'rediss://user:pw@cache.example.com:6380/2' })).not.to.throw();
    expect(() => loadConfig({ REDIS_URL: '/tmp/pcs-redis/redis.sock' })).not.to.throw();
  });

  it('refuses list entries that are not what the setting takes, naming the setting and what an entry must be', () => {
    const refusals: Array<[string, string, string]> = [
      ['DATABASE_URL', 'notaurl', 'postgres:// or postgresql:// URL'],
      ['DATABASE_URL', 'mysql://db/x', 'postgres:// or postgresql:// URL'],
      ['OUTBOUND_ALLOW_LIST', 'foo', 'a full IP address or a CIDR range'],
      ['OUTBOUND_ALLOW_LIST', '10.0.0.0/40', 'a full IP address or a CIDR range'],
      ['OUTBOUND_ALLOWED_PORTS', 'abc,443', 'a port from 1 to 65535, or * for any'],
      ['OUTBOUND_ALLOWED_PORTS', '99999', 'a port from 1 to 65535, or * for any'],
      ['MCP_ALLOWED_ORIGINS', 'not an origin', 'an origin such as'],
      ['MCP_ALLOWED_ORIGINS', 'https://console.example.com/path', 'an origin such as'],
      ['OUTBOUND_ALLOW_LIST', '[::1]', 'a full IP address or a CIDR range'],
      ['ENGINE_EXTRA_WORKER_MODULES', '/tmp', 'the absolute path of an existing file'],
      ['DB_STATEMENT_TIMEOUT_MS', '3000000000', 'DB_STATEMENT_TIMEOUT_MS ('],
      ['ENGINE_EXTRA_WORKER_MODULES', 'relative/mod.js', 'the absolute path of an existing file'],
      ['ENGINE_EXTRA_WORKER_MODULES', '/nonexistent/mod.js', 'the absolute path of an existing file'],
      ['MCP_ALLOWED_ORIGINS', 'https://user:pw@console.example.com', 'an origin such as'],
      ['MCP_ALLOWED_ORIGINS', 'https://console.example.com?x=1', 'an origin such as'],
      // An empty list would let every port through (the guard reads no ports as any): * says that.
      ['OUTBOUND_ALLOWED_PORTS', ',', 'at least one port, or * for any'],
      ['METRICS_TOKEN', 'short', 'at least 16 characters'],
    ];
    for (const [env, value, words] of refusals) {
      expect(() => loadConfig({ [env]: value }), `${env}=${value}`).to.throw(ConfigError, words);
    }
    // Forms the driver takes: a unix socket, an IPv6 host.
    for (const url of ['postgresql:///pcs?host=/var/run/postgresql', 'postgres://u:p@[::1]:5432/pcs', 'postgres://db.internal/pcs?sslmode=require']) {
      expect(loadConfig({ DATABASE_URL: url }).database.url, url).to.equal(url);
    }
    // A short pepper is warned about at start, not refused: a deployment made with one keeps its keys.
    const ok = loadConfig({ OUTBOUND_ALLOW_LIST: '127.0.0.1, 10.0.0.0/8, fd00::/8, ::1', OUTBOUND_ALLOWED_PORTS: '*', MCP_ALLOWED_ORIGINS: 'https://console.example.com,http://localhost:6274', API_KEY_PEPPER: 'short' });
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: '*' }).mcp.allowedOrigins).to.deep.equal(['*']);
    expect(ok.outbound.allowList).to.deep.equal(['127.0.0.1', '10.0.0.0/8', 'fd00::/8', '::1']);
    expect(ok.outbound.allowedPorts).to.deep.equal(['*']);
    // Written as people write origins, kept as browsers send them: a trailing slash, capitals and a default port are the same origin.
    expect(loadConfig({ MCP_ALLOWED_ORIGINS: 'https://console.example.com/, https://Console.Example.com:443, http://a.example.com:8080/' }).mcp.allowedOrigins).to.deep.equal([
      'https://console.example.com',
      'https://console.example.com',
      'http://a.example.com:8080',
    ]);
  });

  it('refuses PORT equal to EMBEDDED_PG_PORT when the embedded PostgreSQL is used, naming both settings', () => {
    expect(() => loadConfig({ PORT: '5555', EMBEDDED_PG_PORT: '5555' })).to.throw(ConfigError, /PORT \(server\.port\) and EMBEDDED_PG_PORT \(database\.embeddedPort\) are both 5555/);
    // With DATABASE_URL no embedded PostgreSQL listens, and 0 picks a free port for each.
    expect(loadConfig({ PORT: '5555', EMBEDDED_PG_PORT: '5555', DATABASE_URL: 'postgres://u:p@db/x' }).server.port).to.equal(5555);
    expect(loadConfig({ PORT: '0', EMBEDDED_PG_PORT: '0' }).server.port).to.equal(0);
  });

  it('refuses LATENCY_COLD_BELOW above LATENCY_MAX_SAMPLES, naming both settings', () => {
    expect(() => loadConfig({ LATENCY_COLD_BELOW: '300' })).to.throw(ConfigError, /LATENCY_COLD_BELOW \(engine\.latencyColdBelow\) = 300 is above LATENCY_MAX_SAMPLES \(engine\.latencyMaxSamples\) = 256/);
    expect(() => loadConfig({ LATENCY_COLD_BELOW: '9', LATENCY_MAX_SAMPLES: '8' })).to.throw(ConfigError, /LATENCY_MAX_SAMPLES/);
    expect(loadConfig({ LATENCY_COLD_BELOW: '8', LATENCY_MAX_SAMPLES: '8' }).engine.latencyColdBelow).to.equal(8);
  });

  it('refuses a PLUGINS list that names no plugin; an empty PLUGINS means the default list', () => {
    for (const value of [',', ' , ,']) expect(() => loadConfig({ PLUGINS: value }), value).to.throw(ConfigError, /PLUGINS \(plugins\.enabled\) = \[\] from environment variable PLUGINS: must name at least one plugin/);
    expect(loadConfig({ PLUGINS: '' }).plugins.enabled).to.deep.equal(loadConfig({}).plugins.enabled);
  });

  it('takes a variable of spaces only as the default, for every kind of setting', () => {
    const defaults = loadConfig({});
    const blank = loadConfig({ DB_POOL_MAX: ' ', VERIFY_BAND_K: '  ', SECURE_COOKIES: ' ', LOG_LEVEL: '\t', HOST: ' ', PLUGINS: ' ', TRUST_PROXY: ' ', TOP_UP_MINIMUM_USDC: ' ', PUBLIC_URL: ' ', OUTBOUND_ALLOWED_PORTS: ' ' });
    expect(blank).to.deep.equal(defaults);
  });

  it('stops the process at start with a message naming the bad setting', function () {
    this.timeout(20_000);
    const res = spawnSync(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: 'abc', DATABASE_URL: '' }, encoding: 'utf8', timeout: 15_000 });
    expect(res.status).to.equal(1);
    expect(res.stderr).to.contain('PORT (server.port)');
  });

  it('names environment variables that look like misspelt settings, and nothing else of the environment', () => {
    expect(misspelledSettings({ SANDBOX_COMPUTE_CALLS_PER_DAYS: '3', DATABASE_URI: 'x', sandbox_compute_calls_per_day: '3', HOME: '/root', HOSTNAME: 'vm', SESSION_MANAGER: 'x', NODE_ENV: 'production', PORT: '1' })).to.deep.equal([
      { name: 'SANDBOX_COMPUTE_CALLS_PER_DAYS', meant: 'SANDBOX_COMPUTE_CALLS_PER_DAY' },
      { name: 'DATABASE_URI', meant: 'DATABASE_URL' },
      { name: 'sandbox_compute_calls_per_day', meant: 'SANDBOX_COMPUTE_CALLS_PER_DAY' },
    ]);
    // A name spelt out past an edit or two: the HOURS of every other hours setting.
    expect(misspelledSettings({ IDEMPOTENCY_KEY_TTL_HOURS: '48' })).to.deep.equal([{ name: 'IDEMPOTENCY_KEY_TTL_HOURS', meant: 'IDEMPOTENCY_KEY_TTL_H' }]);
  });

  it('warns at start about a misspelt setting, naming the one it likely meant', function () {
    this.timeout(20_000);
    const res = spawnSync(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: 'abc', SANDBOX_COMPUTE_CALLS_PER_DAYS: '3' }, encoding: 'utf8', timeout: 15_000 });
    expect(res.stderr).to.contain('Warning: SANDBOX_COMPUTE_CALLS_PER_DAYS is not a setting of this service and has no effect; did you mean SANDBOX_COMPUTE_CALLS_PER_DAY?');
  });

  it('stops the process at start naming DATABASE_URL, without its password or a stack, when the database cannot be reached', function () {
    this.timeout(20_000);
    const res = spawnSync(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: '0', DATABASE_URL: 'postgres://pcs:s3cret-pw@127.0.0.1:1/pcs', REDIS_URL: '' }, encoding: 'utf8', timeout: 15_000 });
    expect(res.status).to.equal(1);
    expect(res.stderr).to.contain('The database named by DATABASE_URL (127.0.0.1:1/pcs) could not be reached');
    expect(res.stderr).to.not.contain('s3cret-pw');
    expect(res.stderr).to.not.match(/^\s+at /m);
  });

  it('stops the process at start naming HOST and PORT when the server cannot listen there', function () {
    this.timeout(40_000);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pcs-host-'));
    chmodSync(dataDir, 0o755);
    try {
      // 192.0.2.1 (TEST-NET-1) is no address of this machine.
      const res = spawnSync(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: '0', HOST: '192.0.2.1', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: '' }, encoding: 'utf8', timeout: 35_000 });
      expect(res.status, res.stderr).to.equal(1);
      expect(res.stderr).to.contain('The HTTP server could not listen on HOST 192.0.2.1, PORT 0');
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('stops the process at start naming REDIS_URL and REDIS_CONNECT_WAIT_MS, with one line per retry and no stack, when Redis is not ready', function () {
    this.timeout(60_000);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pcs-redis-'));
    chmodSync(dataDir, 0o755);
    try {
      const res = spawnSync(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: '0', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: 'redis://127.0.0.1:1', REDIS_CONNECT_WAIT_MS: '1000', LOG_LEVEL: 'warn' }, encoding: 'utf8', timeout: 50_000 });
      expect(res.status, res.stderr).to.equal(1);
      expect(res.stderr).to.match(/^Redis at REDIS_URL was not ready within REDIS_CONNECT_WAIT_MS \(1000 ms\) \(connect ECONNREFUSED 127\.0\.0\.1:1\); start the service again once it is reachable\.\n$/);
      const retries = res.stdout.split('\n').filter((l) => l.includes('key-value store connection failed'));
      // The same reason is logged once per 30 s, not once per reconnection attempt.
      expect(retries).to.have.length(1);
      for (const line of retries) expect(JSON.parse(line)).to.include({ reason: 'connect ECONNREFUSED 127.0.0.1:1' }).and.not.to.have.property('err');
      expect(res.stdout + res.stderr).not.to.match(/^\s+at /m);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('stops at once, without waiting out REDIS_CONNECT_WAIT_MS, when Redis refuses the credentials in REDIS_URL, saying that a retry will not help', async function () {
    this.timeout(60_000);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pcs-redis-auth-'));
    chmodSync(dataDir, 0o755);
    // A Redis that refuses every credential, as one with requirepass answers a wrong password.
    const redis = createNetServer((socket) => socket.on('data', () => socket.write('-WRONGPASS invalid username-password pair or user is disabled.\r\n')));
    await new Promise<void>((resolve) => redis.listen(0, '127.0.0.1', () => resolve()));
    const port = (redis.address() as { port: number }).port;
    try {
      const res = await new Promise<{ status: number | null; stdout: string; stderr: string; ms: number }>((resolve) => {
        const child = spawn(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: '0', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: `redis://:NotThePassword@127.0.0.1:${port}`, REDIS_CONNECT_WAIT_MS: '30000', LOG_LEVEL: 'warn' } });
        let stdout = '';
        let stderr = '';
        let askedAt = 0;
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        redis.once('connection', () => (askedAt = Date.now()));
        child.on('exit', (status) => resolve({ status, stdout, stderr, ms: Date.now() - askedAt }));
      });
      expect(res.status, res.stderr).to.equal(1);
      expect(res.stderr).to.match(/^Redis at REDIS_URL refused the credentials it was given \(WRONGPASS invalid username-password pair or user is disabled\.\); check the user and password in REDIS_URL/);
      expect(res.stderr + res.stdout).not.to.include('NotThePassword');
      // Far from the 30 s it would otherwise wait (the rest is stopping the embedded PostgreSQL).
      expect(res.ms).to.be.lessThan(15_000);
    } finally {
      redis.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('says a REDIS_URL that answers something other than Redis does not speak its protocol (an HTTP server), logged once', async function () {
    this.timeout(60_000);
    const dataDir = mkdtempSync(path.join(tmpdir(), 'pcs-redis-http-'));
    chmodSync(dataDir, 0o755);
    const http = createHttpServer((_req, res) => res.end('<html></html>'));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
    const port = (http.address() as { port: number }).port;
    try {
      const res = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PORT: '0', DATA_DIR: dataDir, DATABASE_URL: '', REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_CONNECT_WAIT_MS: '1000', LOG_LEVEL: 'warn' } });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('exit', (status) => resolve({ status, stdout, stderr }));
      });
      expect(res.status, res.stderr).to.equal(1);
      expect(res.stderr).to.match(/^Redis at REDIS_URL was not ready within REDIS_CONNECT_WAIT_MS \(1000 ms\) \(the server at REDIS_URL does not speak the Redis protocol \(its answer began with "H"\): check the host and port/);
      // Each reason is logged once (the protocol error, and what the closed connection then says), not once per attempt.
      const reasons = res.stdout.split('\n').filter((l) => l.includes('key-value store connection failed')).map((l) => (JSON.parse(l) as { reason: string }).reason);
      expect(reasons.filter((r) => r.startsWith('the server at REDIS_URL does not speak the Redis protocol'))).to.have.length(1);
      expect(new Set(reasons).size).to.equal(reasons.length);
    } finally {
      http.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('stops the process at start when PLUGINS names an unknown plugin', function () {
    this.timeout(20_000);
    const res = spawnSync(process.execPath, [path.join(root, 'dist/core/main.js')], { env: { ...process.env, PLUGINS: 'health,warp-drive' }, encoding: 'utf8', timeout: 15_000 });
    expect(res.status).to.equal(1);
    expect(res.stderr).to.contain('Unknown plugin "warp-drive"');
  });

  it('keeps the README configuration table identical to the settings declarations', () => {
    const readme = readFileSync(path.join(root, 'README.md'), 'utf8');
    const start = readme.indexOf('<!-- config-table:start -->');
    const end = readme.indexOf('<!-- config-table:end -->');
    expect(start, 'README has the config-table markers').to.be.greaterThan(-1);
    expect(readme.slice(start + '<!-- config-table:start -->'.length, end).trim()).to.equal(renderConfigTable());
  });
});
