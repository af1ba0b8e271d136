import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { MAX_TIMER_MS, bool, browserOrigin, decimal, int, isAddressOrCidr, isOrigin, isPort, list, num, oneOf, optBool, optInt, optStr, postgresUrlProblem, proxyTrust, redisUrlProblem, str } from './settings';
import type { ConfigOf, ConfigOverrides } from './settings';

/**
 * Every setting of the service. SPEC's Limits table appears under `limits` with SPEC's defaults;
 * values SPEC leaves open ("not shown") carry the default chosen here and documented in the README.
 */
export const settingsTree = {
  server: {
    host: str('HOST', '0.0.0.0', 'Address the HTTP server binds to.'),
    port: int('PORT', 3000, 'TCP port of the HTTP server (0 picks a free port).', { min: 0, max: 65535 }),
    publicUrl: optStr('PUBLIC_URL', 'Production base URL, used in OpenAPI, discovery documents and links (default: the address the service listens on, http://HOST:PORT, with 127.0.0.1 for HOST 0.0.0.0 or ::). An http or https URL, optionally with a path, without a query or fragment (links are made by appending paths to it).', { url: true, check: { test: (v) => /^https?:\/\/[^?#]+$/i.test(v), message: 'must be an http or https URL without a query or fragment, such as https://pricing.example.com' } }),
    shutdownTimeoutMs: int('SHUTDOWN_TIMEOUT_MS', 10000, 'How long a graceful shutdown waits for in-flight requests before closing connections.', { min: 0 }),
    shutdownIdleGraceMs: int(
      'SHUTDOWN_IDLE_GRACE_MS',
      500,
      'How long a graceful shutdown keeps idle kept-alive connections open once it has stopped accepting new ones, so a request a busy client has already sent on one (still in the socket, unread) is answered 503 shutting_down with Connection: close instead of cut by a reset, which would leave the client unsure whether it ran. Ends early once no client connection is open; within SHUTDOWN_TIMEOUT_MS.',
      { min: 0 },
    ),
    headersTimeoutMs: int('HEADERS_TIMEOUT_MS', 66000, 'How long a request may take to send its headers before the server answers 408 and closes the connection (Node headersTimeout). Keep it above KEEP_ALIVE_TIMEOUT_MS (advice, not checked), so a load balancer reusing an idle connection is never cut; at most REQUEST_TIMEOUT_MS (checked at start).', { min: 100 }),
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 120000, 'How long a request may take to arrive whole, headers and body, before the server answers 408 and closes the connection (Node requestTimeout; Node\'s own default is 5 minutes, which lets slow callers hold connections). At least HEADERS_TIMEOUT_MS.', { min: 100 }),
    keepAliveTimeoutMs: int('KEEP_ALIVE_TIMEOUT_MS', 65000, 'How long an idle kept-alive connection stays open for its next request. Above the idle timeout of a load balancer in front (60 s for the common ones), so the service never closes a connection the balancer is about to reuse.', { min: 0 }),
    maxConnections: int('MAX_CONNECTIONS', 10000, 'Most open client connections the HTTP server holds; a connection past it is closed at once, unanswered (counted in http_connections_dropped_total). 0: no limit.', { min: 0 }),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 1048576, 'Largest request body accepted, in bytes.', { min: 1024 }),
    bodyMaxDepth: int('BODY_MAX_DEPTH', 64, 'Deepest nesting of arrays and objects a JSON request body may have (deeper: 400 invalid_json).', { min: 2, max: 1000 }),
    trustProxy: proxyTrust(
      'TRUST_PROXY',
      ['loopback'],
      'Which X-Forwarded-For hops give the caller address (Express trust proxy): true (every hop, the left-most address wins), false (none), a number of proxy hops in front of the service (e.g. 1), or a comma-separated list of proxy addresses, CIDR ranges and the names loopback, linklocal, uniquelocal. A proxy address is written in full (10.0.0.1), since Express would read 1 in a list as 0.0.0.1.',
    ),
    heapGrowingPercent: int(
      'HEAP_GROWING_PERCENT',
      150,
      "How far the JavaScript heap may grow past its live size before a full garbage collection, in percent (V8 --heap-growing-percent, set at start for the process and its worker threads). Under load, short-lived request objects reach the old generation (about 11 KB per compute request, `npm run bench:heap`), so this sets how often a full collection pauses every request in flight. Compute benchmark, 2026-11-28, three alternating runs each (p99 against the bare route's, peak resident memory of the service): 60 gave 2.1 to 2.4 times at 193 MB, 100 gave 1.7 to 1.9 at 213 MB, 150 gave 1.6 to 1.8 at 240 MB; 0 (V8's own policy, under which a host with much memory lets them pile up to several times the live heap) 1.6 at 312 MB. Lower saves memory for more frequent pauses.",
      { min: 0, max: 1000 },
    ),
  },
  metrics: {
    readinessCacheMs: int(
      'READINESS_CACHE_MS',
      1000,
      'How long the outcome of the readiness checks (the database, Redis when configured, the pricing pool) is reused: by GET /readyz, which anyone may call, and by the service_dependency_up gauge at each scrape. Requests meanwhile share one run of the checks instead of each sending the database a query. 0 runs them for every request (concurrent requests still share a run).',
      { min: 0, max: 60_000 },
    ),
    token: optStr(
      'METRICS_TOKEN',
      'When set (at least 16 characters; a long random string), GET /metrics answers only requests with Authorization: Bearer <this token> (others 401). Unset, /metrics is open to anyone who reaches the service: keep it on a private network then, since it names every pricing function (private ones included, by id) with its call counts, outcomes and latency.',
      { secret: true, minLength: 16 },
    ),
    maxFunctionLabels: int(
      'METRICS_MAX_FUNCTION_LABELS',
      1000,
      "Functions other than built-ins that get their own `function` label in the pricing metrics, the first this instance runs; later ones share the label `other` (built-ins always have theirs). Each labelled function adds about 22 series to every scrape for the life of the process, and anyone who signs up can register functions: the cap bounds the scrape and the process's memory.",
      { min: 0 },
    ),
  },
  log: {
    level: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info', 'Log level of the structured JSON log.'),
    repeatIntervalMs: int(
      'LOG_REPEAT_INTERVAL_MS',
      30000,
      'How often the same failure of a store is logged again while it lasts: Redis or the database not answering requests (503), a usage write failing, a Redis reconnection failing. The first is logged at once; the next of its kind after this interval, with the count held back meanwhile. An outage fails every request alike, and a line each would flood the log. 0 logs every one.',
      { min: 0 },
    ),
  },
  database: {
    url: optStr('DATABASE_URL', 'PostgreSQL connection URL (postgres:// or postgresql://; a % in its user, password or database name written as %25). When unset an embedded PostgreSQL is started in DATA_DIR.', {
      secret: true,
      check: { problem: postgresUrlProblem },
    }),
    dataDir: str('DATA_DIR', './data', 'Folder holding the embedded PostgreSQL cluster (without DATABASE_URL), and, with or without it, the usage events a stop could not mark not delivered (the database did not answer), which the next start marks.'),
    embeddedPort: int('EMBEDDED_PG_PORT', 0, 'Port of the embedded PostgreSQL (0 picks a free port).', { min: 0, max: 65535 }),
    embeddedStopTimeoutMs: int(
      'EMBEDDED_PG_STOP_TIMEOUT_MS',
      10000,
      'At shutdown, how long the embedded PostgreSQL gets for a fast shutdown (every usage event already committed); past it an immediate one (no checkpoint: the next start replays its write-ahead log) gets as long again, and past that its processes are killed, so a paused or hung server cannot hold the stop forever. Each step is logged.',
      { min: 100 },
    ),
    poolMax: int(
      'DB_POOL_MAX',
      10,
      'Largest number of connections of the main database pool per instance. A second pool (pricing-compute-hot: the usage writer and the reads of stored price observations) opens up to max(2, ceil(DB_POOL_MAX / 2)) more, so one instance opens at most DB_POOL_MAX + max(2, ceil(DB_POOL_MAX / 2)) connections (15 with the default 10); size PostgreSQL\'s max_connections for that times the instances (the embedded PostgreSQL sizes its own for one instance).',
      { min: 1, max: 1000 },
    ),
    statementTimeoutMs: int('DB_STATEMENT_TIMEOUT_MS', 15000, 'Statement timeout applied to every database session (the usage writer\'s included: an event that cannot be written in time answers 503 and is not charged).', { min: 0, max: MAX_TIMER_MS }),
    answerGraceMs: int(
      'DB_ANSWER_GRACE_MS',
      5000,
      'How much longer than DB_STATEMENT_TIMEOUT_MS the service waits on its own side for the database to answer a statement before giving up on that connection (a frozen server or a network partition, where the database\'s own timeout cannot fire): the request answers 503 service_unavailable. Larger than 0 so that a merely slow statement is ended by the database (which rolls it back) first. With DB_STATEMENT_TIMEOUT_MS 0 there is no limit on either side.',
      { min: 1, max: MAX_TIMER_MS },
    ),
    connectTimeoutMs: int('DB_CONNECT_TIMEOUT_MS', 5000, 'Longest the service waits for a new database connection to open (an unreachable host otherwise waits for the operating system\'s TCP timeout); past it the request answers 503 service_unavailable.', { min: 1, max: MAX_TIMER_MS }),
    closeTimeoutMs: int(
      'DB_CLOSE_TIMEOUT_MS',
      5000,
      'At shutdown, how long each database pool gets to close its connections (a paused or unreachable server never answers the goodbye); past it the stop goes on without waiting, logged, and the connections end with the process.',
      { min: 1, max: MAX_TIMER_MS },
    ),
    acquireTimeoutMs: int('DB_ACQUIRE_TIMEOUT_MS', 10000, 'Longest a statement waits for a connection of its pool, a free one or a new one (all DB_POOL_MAX in use under load); past it the request answers 503 service_unavailable.', { min: 1, max: MAX_TIMER_MS }),
  },
  redis: {
    url: optStr('REDIS_URL', 'Redis URL (redis:// or rediss://, with a port from 1 to 65535 and a database number of 0 or more as its path, such as redis://127.0.0.1:6379/0), or the absolute path of its Unix socket; a database number the server does not have stops the start. When set, counters, rate limits, caches and one-time marks are shared through Redis; otherwise they live in process.', {
      secret: true,
      check: { problem: redisUrlProblem },
    }),
    keyPrefix: str('REDIS_KEY_PREFIX', 'pcs:', 'Prefix of every Redis key written by the service. Keys that must share a Redis Cluster slot carry it inside a hash tag (`{pcs:…}…`), so an ACL or a SCAN covers both `pcs:*` and `{pcs:*`.'),
    commandTimeoutMs: int(
      'REDIS_COMMAND_TIMEOUT_MS',
      1000,
      'Longest a Redis command (a rate-limit count, a counter, a cache read) waits for its answer. Past it, or while Redis cannot be reached, the request answers 503 service_unavailable (retryable, with Retry-After) instead of waiting for Redis; the connection keeps reconnecting on its own, so requests succeed again once Redis is back. While Redis cannot be reached, commands fail at once and are never queued to run later (a count refused then is never applied); one that timed out against a Redis that was reached but stalled may still be applied when it resumes. The subscription connection (cache invalidation across instances) is not bounded by it: it waits for messages for as long as it is open.',
      { min: 1, max: MAX_TIMER_MS },
    ),
    connectWaitMs: int('REDIS_CONNECT_WAIT_MS', 5000, 'Longest the service waits at start for its Redis connection to be ready; past it the start fails (naming this setting and the last connection error), to be retried by whatever runs the service. An outage after the start answers 503 instead. At least 100 (connecting takes a moment even to a local Redis).', { min: 100, max: MAX_TIMER_MS }),
  },
  plugins: {
    enabled: list(
      'PLUGINS',
      ['health', 'identity', 'accounts', 'team', 'usage', 'pricing', 'discovery', 'mcp', 'verification', 'catalog'],
      'Comma-separated list of enabled plugins; their dependencies must be listed too. A list that names no plugin (such as ,) is refused; leave the variable empty for the default.',
      { check: (entry) => entry !== '', message: 'must be a plugin name', nonEmpty: 'must name at least one plugin (leave PLUGINS empty or unset for the default list)' },
    ),
  },
  identity: {
    apiKeyPepper: optStr('API_KEY_PEPPER', 'Server-side pepper mixed into API key hashes; use at least 16 random characters (a shorter one is warned about at start). When unset, one is generated once and kept in the database; set it before the first start, since keys issued under one pepper do not verify under another (a start whose pepper differs from the one its keys were made with is refused).', { secret: true }),
    tokenSecret: optStr('AUTH_TOKEN_SECRET', 'Secret signing access tokens and person tokens (HS256). When unset, one is generated once and kept in the database. Every instance sharing a database needs the same one (or all leave it unset); a start with another one than the last start logs a warning, since tokens signed with the other answer 401. Changing it ends every token at once.', { secret: true }),
    selfRegistrationOpen: bool('SELF_REGISTRATION_OPEN', true, 'Whether agent self-registration and OAuth client registration are open; when false they answer 503 self_registration_closed.'),
    registrationAllowedOrigins: list('REGISTRATION_ALLOWED_ORIGINS', [], "Web origins (scheme://host[:port]) allowed to register agents and OAuth clients from a browser page; pages of other sites get 403, since such a page could register sandboxes from its visitors' addresses and spend the registration limits without ever reading a key (the service sends no CORS headers). The service's own origin and pages on loopback are always allowed; * allows every origin.", { check: (e) => e === '*' || isOrigin(e), message: 'must be an origin such as https://console.example.com (scheme, host and optional port; no path), or * for any', normalize: browserOrigin }),
    selfRegistrationRetryAfterS: int('SELF_REGISTRATION_RETRY_AFTER_S', 3600, 'Retry-After sent while self-registration is closed, in seconds.', { min: 1 }),
    accessTokenTtlS: int('ACCESS_TOKEN_TTL_S', 3600, 'Lifetime of OAuth access tokens, in seconds.', { min: 60, max: 86400 }),
    personTokenTtlS: int('PERSON_TOKEN_TTL_S', 3600, 'Lifetime of person bearer tokens (JWT), in seconds.', { min: 60, max: 86400 }),
    sessionTtlHours: int('SESSION_TTL_HOURS', 168, 'Lifetime of a person\'s browser session, in hours.', { min: 1 }),
    claimLinkTtlDays: int('CLAIM_LINK_TTL_DAYS', 30, 'Days a sandbox claim link stays usable (it is also one-time).', { min: 1 }),
    invitationTtlDays: int('INVITATION_TTL_DAYS', 7, 'Days a team invitation stays acceptable.', { min: 1 }),
    credentialCacheMaxEntries: int('CREDENTIAL_CACHE_MAX_ENTRIES', 50000, 'Most entries each in-process credential cache holds: verified API keys (and unknown ones, for 5 s), person sessions by cookie and id, the keys whose seen notices are remembered, and the account verification counts each caller\'s workspace under. Past it the oldest entry is dropped (read again from the database when next used), so credentials callers make up cannot grow the process; entries past their time are dropped as new ones come, so the caches hold about what was used lately. 0 caches none.', { min: 0 }),
    keyCacheTtlMs: int('KEY_CACHE_TTL_MS', 30000, 'How long a verified key stays in the in-process cache. A revocation invalidates it at once on the instance that made it and, with REDIS_URL, on every instance; instances sharing a database without Redis may accept a revoked key until this passes.', { min: 0 }),
    secureCookies: optBool(
      'SECURE_COOKIES',
      'Mark session cookies Secure, so browsers send them over HTTPS only. Unset: Secure exactly when PUBLIC_URL is an https URL (the service is reached over HTTPS, TLS ended in front of it or not). Set false only to sign in over plain HTTP to a service whose PUBLIC_URL says https.',
    ),
  },
  engine: {
    threads: int('ENGINE_THREADS', 0, 'Worker threads of the pricing pool (0 = the number of cores).', { min: 0, max: 256 }),
    tasksPerWorker: int('ENGINE_TASKS_PER_WORKER', 1, 'Pricing tasks handed to one worker thread at a time (Piscina concurrentTasksPerWorker); above 1 a worker starts its next task without waiting for the main thread, and a worker terminated for a timeout hands its unstarted tasks back to the pool.', { min: 1, max: 64 }),
    maxQueue: int('ENGINE_MAX_QUEUE', 2000, 'Pricing tasks that may wait for a worker before new ones are refused.', { min: 1 }),
    functionTimeoutMs: int('ENGINE_FUNCTION_TIMEOUT_MS', 2000, 'Time limit of one pricing function call (built-in or external) unless the function sets its own. A built-in call\'s time counts from when a worker starts it; waiting for a worker is bounded by the same length (then the attempt is pool_busy).', { min: 1, max: MAX_TIMER_MS }),
    callMaxMs: int('COMPUTE_CALL_MAX_MS', 25000, 'Time budget of one priced call\'s attempts (the chosen function and every fallback; each batch item has its own): each attempt gets the smaller of its own time limit and the time left, and once it is spent the remaining functions are skipped ("call time budget spent") and the call answers 502 functions_failed. The default leaves a margin under MCP_TOOL_TIMEOUT_MS (30000), whose timer starts earlier (authentication, admission): an MCP call whose functions all hang gets that uncharged, retryable 502 rather than the tool timeout, which may still be charged.', { min: 1, max: MAX_TIMER_MS }),
    workerHeapMb: int('ENGINE_WORKER_HEAP_MB', 64, 'Heap limit of each pricing worker thread; a function exceeding it fails alone.', { min: 8 }),
    marketEvidence: bool('ENGINE_MARKET_EVIDENCE', true, 'Whether competitive-position and anchored-adjustment, given a context with a product_type and no competitor_prices, take their reference from the price observations stored on the network for that product type and currency (the observations price verification reads; with the verification plugin only).'),
    marketMaxSources: int('ENGINE_MARKET_MAX_SOURCES', 200, 'Most sources (workspace and source label, newest first) whose median prices a built-in method receives as network market evidence; with more, the reference is taken over these only and can differ from the one verification reports.', { min: 1, max: 1000 }),
    marketLookupTimeoutMs: int('ENGINE_MARKET_LOOKUP_TIMEOUT_MS', 200, 'Longest a compute waits for the network\'s price observations of its product type; past it (a busy database) the call is priced without them and its trace says so.', { min: 1, max: MAX_TIMER_MS }),
    marketIndexRefreshMs: int('ENGINE_MARKET_INDEX_REFRESH_MS', 60000, 'How often the in-memory list of product types with stored observations is reloaded (a context naming a product type not on it is priced without a database lookup; this instance\'s own observations are added at once, other instances\' within this time).', { min: 1000, max: MAX_TIMER_MS }),
    marketIndexMax: int('ENGINE_MARKET_INDEX_MAX', 100000, 'Most distinct product types (per currency) that list holds; with more, every market-evidence lookup asks the database.', { min: 0 }),
    cacheTtlMs: int('ENGINE_CACHE_TTL_MS', 30000, 'How long a computed result is reused for the same function and context (0 disables the cache).', { min: 0 }),
    latencyWindowMs: int('LATENCY_WINDOW_MS', 300000, 'Window of the latency statistics used by `fastest` and the catalogue.', { min: 1000 }),
    latencyMaxSamples: int('LATENCY_MAX_SAMPLES', 256, 'Most latency samples kept per function inside the window.', { min: 8 }),
    latencyColdBelow: int('LATENCY_COLD_BELOW', 3, 'A function with fewer samples in the window is cold: explored first by `fastest`, and first within a cost tie by `cheapest` (the fewest samples first).', { min: 1 }),
    breakerWindowMs: int('BREAKER_WINDOW_MS', 60000, 'Window over which a function\'s failures are counted by its circuit breaker.', { min: 1000 }),
    breakerWindowMaxCalls: int(
      'BREAKER_WINDOW_MAX_CALLS',
      1000,
      "Most calls a function's breaker window holds, the latest: a busy function's breaker judges its last calls within BREAKER_WINDOW_MS, and its memory stays bounded whatever the traffic (about 17 bytes a call). A value below BREAKER_MIN_CALLS counts as BREAKER_MIN_CALLS.",
      { min: 1, max: 1_000_000 },
    ),
    breakerMinCalls: int('BREAKER_MIN_CALLS', 5, 'Calls in the window before a breaker may open.', { min: 1 }),
    breakerFailureRatio: num('BREAKER_FAILURE_RATIO', 0.5, 'Failure share in the window that opens a breaker.', { min: 0.01, max: 1 }),
    breakerCooldownMs: int('BREAKER_COOLDOWN_MS', 30000, 'How long an open breaker skips its function before one trial call.', { min: 100 }),
    breakerMinFailingCallers: int(
      'BREAKER_MIN_FAILING_CALLERS',
      2,
      "Distinct caller workspaces whose own calls must be failing (at BREAKER_FAILURE_RATIO) before a function's breaker opens for everyone; they must also be at least BREAKER_FAILURE_RATIO of the workspaces calling it in the window. Until then a workspace whose calls fail has a breaker of its own, opened by its calls alone, which skips the function for that workspace only: one workspace sending contexts an endpoint fails on cannot take a marketplace function away from the others. 1: one failing workspace is enough when it is the only one calling.",
      { min: 1, max: 1000 },
    ),
    breakerMaxCallerEntries: int(
      'BREAKER_MAX_CALLER_ENTRIES',
      10000,
      'Most per-workspace breakers (one per function a workspace calls) one instance keeps; past it the oldest made is dropped (that workspace\'s calls go through again until they fail anew). With BREAKER_CALLER_WINDOW_MAX_CALLS it bounds their memory: about 4 KB a breaker at the defaults, 40 MB in all.',
      { min: 100 },
    ),
    breakerCallerWindowMaxCalls: int('BREAKER_CALLER_WINDOW_MAX_CALLS', 100, "Most calls a workspace's own breaker of a function holds, the latest. A value below BREAKER_MIN_CALLS counts as BREAKER_MIN_CALLS.", { min: 1, max: 100_000 }),
    policyCacheMaxEntries: int('ROUTING_POLICY_CACHE_MAX_ENTRIES', 50000, "Workspaces whose default routing policy (or its absence) each instance keeps in process, for up to a minute, since every compute reads it. Past it the oldest workspace's is dropped and read again from the database when next used, so workspaces that computed once do not stay in memory. 0 caches none.", { min: 0 }),
    randomSeed: optInt('ENGINE_RANDOM_SEED', 'Seed of the random source of weighted and tie-band choices (tests); unset = cryptographic randomness.'),
    extraWorkerModules: list(
      'ENGINE_EXTRA_WORKER_MODULES',
      [],
      'Absolute paths of extra modules loaded in pricing workers (each exports `functions`, an object of methods by name), for operators adding in-process methods and for tests. The start fails when a worker cannot load one, or one exports no such object.',
      { check: (entry) => path.isAbsolute(entry) && existsSync(entry) && statSync(entry).isFile(), message: 'must be the absolute path of an existing file' },
    ),
  },
  catalog: {
    leaderboardRefreshMs: int('LEADERBOARD_REFRESH_MS', 300000, 'How often the public leaderboard aggregate is recomputed in the background, in ms (also once at start; requests never scan usage).', { min: 1000, max: MAX_TIMER_MS }),
    leaderboardWindowDays: int('LEADERBOARD_WINDOW_DAYS', 30, 'Days of usage the leaderboard aggregate covers.', { min: 1, max: 3650 }),
  },
  usage: {
    synchronousCommit: bool(
      'USAGE_SYNCHRONOUS_COMMIT',
      true,
      'Whether a usage event waits for its WAL record on disk before the response (PostgreSQL synchronous_commit on the usage writer\'s sessions). off answers sooner but a PostgreSQL or host crash can lose events committed in its last few hundred ms (3 x wal_writer_delay), whose responses and receipts were already sent; never corrupts. Default on.',
    ),
    concurrentInserts: int(
      'USAGE_CONCURRENT_INSERTS',
      1,
      'Usage inserts the writer keeps in flight at once, each a group of the events that arrived meanwhile, on its own connection of the hot pool (max(2, ceil(DB_POOL_MAX / 2)) connections, opened in addition to DB_POOL_MAX and shared with the reads of stored price observations). It opens no connections of its own: above the hot pool\'s size, inserts wait for a free connection of it. More lets an event wait for a free writer instead of for the insert ahead of it.',
      { min: 1, max: 8 },
    ),
  },
  outbound: {
    allowList: list('OUTBOUND_ALLOW_LIST', [], 'Addresses or CIDRs that owner-registered URLs may reach although private or loopback (tests, on-premises upstreams).', { check: isAddressOrCidr, message: 'must be a full IP address or a CIDR range such as 10.0.0.0/8' }),
    httpsOnly: bool('OUTBOUND_HTTPS_ONLY', false, 'Refuse plain-http function endpoints and webhooks.'),
    allowedPorts: list('OUTBOUND_ALLOWED_PORTS', ['443', '80'], 'Ports owner-registered URLs may use (`*`: any); an address on OUTBOUND_ALLOW_LIST may use any port.', { check: (e) => e === '*' || isPort(e), message: 'must be a port from 1 to 65535, or * for any', nonEmpty: 'must name at least one port, or * for any' }),
    maxBodyBytes: int('OUTBOUND_MAX_BODY_BYTES', 65536, 'Largest response body accepted from an outbound request.', { min: 1024 }),
  },
  mcp: {
    allowedOrigins: list('MCP_ALLOWED_ORIGINS', [], 'Web origins (scheme://host[:port]) allowed to call the MCP endpoint from a browser; others get 403. The service\'s own origin and pages on loopback (localhost, 127.0.0.1, [::1]) are always allowed. * allows every origin, which turns off the protection against pages of other sites and DNS rebinding: only for a service whose gateway checks origins itself.', { check: (e) => e === '*' || isOrigin(e), message: 'must be an origin such as https://console.example.com (scheme, host and optional port; no path), or * for any', normalize: browserOrigin }),
  },
  verification: {
    minEffectiveObservations: num('VERIFY_MIN_EFFECTIVE_OBSERVATIONS', 5, 'Smallest effective number of independent submitters (the Kish count over the submitting workspaces, each weighing its time-weighted observations: a workspace counts once, however many quotes it posts) that supports a two-sided verdict; below it the verdict is unknown (or one-sided on a floor or ceiling).', { min: 1 }),
    minSources: int('VERIFY_MIN_SOURCES', 2, 'Smallest number of distinct sources behind a two-sided verdict, counted by submitting workspace (one workspace under several source labels is one source).', { min: 1 }),
    halfLifeDays: num('VERIFY_HALF_LIFE_DAYS', 30, 'Half-life of an observation\'s weight, in days (weight 0.5^(age/half-life)).', { min: 0.01 }),
    maxAgeDays: num('VERIFY_MAX_AGE_DAYS', 120, 'Observations older than this many days are ignored (default four half-lives, where the weight is about 6%).', { min: 0.01 }),
    bandK: num('VERIFY_BAND_K', 3, 'Half-width of the band in robust standard deviations (1.4826 x MAD of log prices).', { min: 0.1, max: 10 }),
    minRelativeHalfWidth: num('VERIFY_MIN_RELATIVE_HALF_WIDTH', 0.05, 'Smallest half-width of the band relative to the reference (0.05 = the band is at least reference / 1.05 to reference x 1.05). Also how far the workspace submitting over half the weight may move the reference before the evidence is not sufficient.', { min: 0, max: 1 }),
    maxObservationsRead: int('VERIFY_MAX_OBSERVATIONS_READ', 2000, 'Newest matching observations read for one verification.', { min: 10, max: 100000 }),
    maxObservationsPerAccount: int('VERIFY_MAX_OBSERVATIONS_PER_ACCOUNT', 100, 'Most of one submitter\'s observations (a workspace with its test and claimed agent workspaces) among those read for one verification or network reference, its newest: one submitter posting thousands of fresh quotes cannot push the others\' evidence out of the read (a full read holding more of one submitter\'s is made again without them).', { min: 1, max: 100000 }),
    observationsPerDay: int('OBSERVATIONS_PER_WORKSPACE_PER_DAY', 10000, 'Price observations one workspace may contribute (POST /api/data/observations) per UTC day; a request that would pass it is refused whole with 429 daily_quota_exceeded (retry_after until 00:00 UTC, limit). Accepted compute outcomes do not count.', { min: 0 }),
    observationsMaxPerRequest: int('OBSERVATIONS_MAX_PER_REQUEST', 500, 'Most price observations in one POST /api/data/observations (more: 400 validation_error; the OpenAPI document states the bound).', { min: 1, max: 10000 }),
    observationRetentionDays: int('OBSERVATIONS_RETENTION_DAYS', 180, 'Stored price observations observed more than this many days ago are deleted, in batches, by a task each instance runs at most once an hour. At least VERIFY_MAX_AGE_DAYS (a start with a shorter one is refused), so verification and the network reference of compute never lose an observation they would read.', { min: 1 }),
    evidenceCacheTtlMs: int('VERIFY_EVIDENCE_CACHE_TTL_MS', 5000, 'How long the observations read for one product type and currency are reused by later verifications on this instance (its own writes refresh them at once; 0 disables).', { min: 0 }),
    evidenceCacheMaxObservations: int('VERIFY_EVIDENCE_CACHE_MAX_OBSERVATIONS', 100000, 'Most observations the reads kept for VERIFY_EVIDENCE_CACHE_TTL_MS hold together on one instance (about 270 bytes each in memory; a read of a product type with none counts one). One read holds up to VERIFY_MAX_OBSERVATIONS_READ, so the reads kept are bounded by what they hold rather than by their number; past it the oldest are dropped and read again when next needed, and a read larger than the whole bound is not kept. 0 keeps none.', { min: 0 }),
  },
  limits: {
    sandbox: {
      computeCallsPerDay: int('SANDBOX_COMPUTE_CALLS_PER_DAY', 25, 'Compute calls a sandbox workspace may make per day, price verifications included (SPEC: 25).', { min: 0 }),
      callLeaseMs: int(
        'SANDBOX_CALL_LEASE_MS',
        15000,
        "How long a sandbox call counted against the daily limit holds its place without word from its instance (which renews the hold every third of this while the call runs). A place held by an instance that stopped (crashed, killed) is given back this long after its last renewal, when the sandbox's next call finds the day's places taken.",
        { min: 1000 },
      ),
      keyLifetimeDays: int('SANDBOX_KEY_LIFETIME_DAYS', 30, 'Days a sandbox key stays valid unless the workspace is claimed (SPEC: 30).', { min: 1 }),
      keyRotationsPerDay: int('SANDBOX_KEY_ROTATIONS_PER_DAY', 5, "Key rotations per day for each agent's keys (a sandbox's, or an agent's in a claimed workspace) (sandbox.limits.key_rotations_per_day).", { min: 0 }),
    },
    registrations: {
      perAddressPerDay: int('REGISTRATIONS_PER_ADDRESS_PER_DAY', 5, 'Self-registrations per network address per day (SPEC: 5).', { min: 0 }),
      overallPerDay: int('REGISTRATIONS_PER_DAY', 200, 'Self-registrations per day overall (SPEC: 200).', { min: 0 }),
    },
    signups: {
      perAddressPerDay: int('SIGNUPS_PER_ADDRESS_PER_DAY', 20, 'Person sign-ups per network address per UTC day (email and password, and the first sign-in of a new wallet): each creates a person, a workspace and its test workspace.', { min: 0 }),
      overallPerDay: int('SIGNUPS_PER_DAY', 2000, 'Person sign-ups per UTC day overall (email and password, and the first sign-in of a new wallet).', { min: 0 }),
    },
    claimedAgentsPerWorkspace: int('CLAIMED_AGENTS_PER_WORKSPACE', 50, 'Claimed agent workspaces one workspace may hold (SPEC: 50).', { min: 0 }),
    perWorkspace: {
      functions: int('FUNCTIONS_PER_WORKSPACE', 200, 'Pricing functions one workspace may register, whatever their status (functions cannot be deleted; every instance holds every function in memory). One more answers 409 conflict with limit.', { min: 0 }),
      routingPolicies: int('ROUTING_POLICIES_PER_WORKSPACE', 100, 'Routing policies one workspace may hold; one more answers 409 conflict with limit (delete one first).', { min: 0 }),
      apiKeys: int('API_KEYS_PER_WORKSPACE', 200, 'Live API keys one workspace may hold (revoked and expired keys do not count; rotating a key does not add one); one more answers 409 conflict with limit (revoke one first).', { min: 0 }),
      agents: int('AGENTS_PER_WORKSPACE', 100, 'Active agents one workspace may create (disabled agents do not count; claimed agents are limited by CLAIMED_AGENTS_PER_WORKSPACE); one more answers 409 conflict with limit (disable one first).', { min: 0 }),
      pendingInvitations: int('PENDING_INVITATIONS_PER_WORKSPACE', 50, 'Pending, unexpired team invitations one workspace may hold; one more answers 409 conflict with limit (revoke one first).', { min: 0 }),
    },
    dayPass: {
      calls: int('DAY_PASS_CALLS', 500, 'Compute calls one day pass adds (SPEC: 500). Payments are not built yet: today only the day_pass step of the daily-limit 429 states it.', { min: 1 }),
      validHours: int('DAY_PASS_VALID_HOURS', 24, 'Hours a day pass stays valid (SPEC: 24). Payments are not built yet: today only the day_pass step of the daily-limit 429 states it.', { min: 1 }),
    },
    topUp: {
      minimumUsdc: decimal('TOP_UP_MINIMUM_USDC', '10', 'Smallest balance top-up in USDC (SPEC: 10). Payments are not built yet: no effect until a payments plugin reads it.'),
      bonusTier1Usdc: decimal('TOP_UP_BONUS_TIER1_USDC', '100', 'Top-up amount from which the first bonus applies (SPEC: 100). Payments are not built yet: no effect until a payments plugin reads it.'),
      bonusTier1Pct: num('TOP_UP_BONUS_TIER1_PCT', 10, 'Bonus percent at the first tier (SPEC: 10). Payments are not built yet: no effect until a payments plugin reads it.', { min: 0, max: 100 }),
      bonusTier2Usdc: decimal('TOP_UP_BONUS_TIER2_USDC', '500', 'Top-up amount from which the second bonus applies (SPEC: 500). Payments are not built yet: no effect until a payments plugin reads it.'),
      bonusTier2Pct: num('TOP_UP_BONUS_TIER2_PCT', 20, 'Bonus percent at the second tier (SPEC: 20). Payments are not built yet: no effect until a payments plugin reads it.', { min: 0, max: 100 }),
    },
    perCallPremiumPct: num('PER_CALL_PREMIUM_PCT', 20, 'How much more a pay-per-call price is than the prepaid price, in percent (SPEC: 20). Payments are not built yet: no effect until a payments plugin reads it.', { min: 0 }),
    paymentSettleAttempts: int('PAYMENT_SETTLE_ATTEMPTS', 3, 'Settlement attempts for one payment (SPEC: 3). Payments are not built yet: no effect until a payments plugin reads it.', { min: 1 }),
    computeContextMaxBytes: int(
      'COMPUTE_CONTEXT_MAX_BYTES',
      32768,
      'Largest compute or verification context, in bytes of its JSON (UTF-8), on every route and MCP tool that takes one (larger: 400 validation_error at context). The context is kept in the result cache and posted as it came to external functions. A batch item\'s context is bounded alone; the whole body by BODY_LIMIT_BYTES.',
      { min: 256, max: 1048576 },
    ),
    functionTestRunsPerDay: int(
      'FUNCTION_TEST_RUNS_PER_DAY',
      100,
      'Test runs (POST /api/functions/{id}/test) per workspace and UTC day of functions it does not own: built-ins and marketplace functions (more: 429 daily_quota_exceeded). A test run is neither recorded nor charged; a workspace\'s own functions are not counted.',
      { min: 1 },
    ),
    batchMaxItems: int('BATCH_MAX_ITEMS', 100, 'Largest number of items in one batch request (SPEC: 100).', { min: 1, max: 1000 }),
    mcp: {
      toolTimeoutMs: int('MCP_TOOL_TIMEOUT_MS', 30000, 'Time limit of one MCP tool call in ms (SPEC: 30000).', { min: 1, max: MAX_TIMER_MS }),
      sessionTtlHours: int('MCP_SESSION_TTL_HOURS', 24, 'Hours an MCP session id stays valid (SPEC: 24).', { min: 1 }),
    },
    notices: {
      perResponse: int('NOTICES_PER_RESPONSE', 3, 'Changelog notices attached to one response (SPEC: 3).', { min: 0 }),
      windowDays: int('NOTICES_WINDOW_DAYS', 30, 'Only entries from this many last days are noticed (SPEC: 30).', { min: 1 }),
      firstContactMaxAgeDays: int('NOTICES_FIRST_CONTACT_MAX_AGE_DAYS', 14, 'A key never shown a notice gets the newest entry only when younger than this (SPEC: two weeks).', { min: 0 }),
    },
    nextActionsMax: int('NEXT_ACTIONS_MAX', 3, 'Most next_actions entries in one response (SPEC: 3).', { min: 0, max: 3 }),
    leaderboard: {
      minDistinctConsumers: int('LEADERBOARD_MIN_DISTINCT_CONSUMERS', 3, 'Distinct consumers needed before usage is published (SPEC: 3).', { min: 1 }),
      confidenceMinCustomers: int('LEADERBOARD_CONFIDENCE_MIN_CUSTOMERS', 5, 'Distinct customers needed before average confidence is published (SPEC: a separate floor).', { min: 1 }),
      confidenceRounding: num('LEADERBOARD_CONFIDENCE_ROUNDING', 0.05, 'Published confidence is rounded to the nearest multiple of this (SPEC: 0.05).', { min: 0.001, max: 1 }),
    },
    functionMaxCallCost: num('FUNCTION_MAX_CALL_COST', 1_000_000, 'Largest cost of one call (cost_per_unit x cost_multiplier, USDC) a workspace function may be registered or changed to; the usage record holds at most 12 digits before the point.', { min: 0, max: 999_999_999_999 }),
    idempotencyKeyTtlHours: int('IDEMPOTENCY_KEY_TTL_H', 24, 'Hours an Idempotency-Key is remembered, of a create request (API key, function, routing policy) and of a priced call (compute, price router, batch) or a price verification: a repeat within them answers what the first created or the first call\'s result, uncharged; after them the key may be used afresh.', { min: 1, max: 720 }),
    idempotencyWaitMs: int('IDEMPOTENCY_WAIT_MS', 30_000, 'Longest a priced call or a verification with an Idempotency-Key waits for a call with the same key already in flight (on this instance, and with Redis on any instance sharing it), to answer what that one recorded; past it, it goes on (the key is still claimed once, so nothing is charged twice). Also the life of the key\'s lease on Redis, after which a holder that died frees it.', { min: 0, max: 300_000 }),
    marketplaceCommissionPct: num('MARKETPLACE_COMMISSION_PCT', 30, 'Default marketplace commission in percent for new listings (SPEC: 30).', { min: 0, max: 100 }),
    minUserAge: int('MIN_USER_AGE', 18, 'Minimum age of a person signing up (SPEC: 18).', { min: 0 }),
    demo: {
      callsPerHour: int('DEMO_CALLS_PER_HOUR', 30, 'Hourly budget of keyless demo calls (compute, verify, MCP) per caller address.', { min: 0 }),
    },
    rateLimit: {
      perWorkspacePerMinute: int('RATE_LIMIT_PER_WORKSPACE_PER_MINUTE', 600, 'Requests per minute per workspace on authenticated routes.', { min: 1 }),
      perAddressPerMinute: int('RATE_LIMIT_PER_ADDRESS_PER_MINUTE', 300, 'Requests per minute per network address, authenticated or anonymous (not the keyless demo routes, which have their own hourly budget).', { min: 1 }),
      failedAuthPerAddressPer15Min: int('RATE_LIMIT_FAILED_AUTH_PER_ADDRESS_PER_15MIN', 20, 'Rejected credentials per address in 15 minutes before the address is slowed down.', { min: 1 }),
      ipv6Prefix: int(
        'RATE_LIMIT_IPV6_PREFIX',
        64,
        'How many leading bits of an IPv6 caller address make the address every per-address limit counts under (request rate, rejected credentials, demo budget, registrations, sign-ups): one host commonly holds a whole /64, so every address in it counts as one. IPv4 (and IPv4-mapped IPv6) addresses count whole. Usage records and logs keep the full address.',
        { min: 1, max: 128 },
      ),
    },
  },
} as const;

export type Config = ConfigOf<typeof settingsTree>;

/**
 * Combinations of settings that are each valid alone but cannot work together, one problem per
 * combination naming every setting involved (loadConfig refuses them like a bad value).
 */
export function crossSettingProblems(c: Config): string[] {
  const problems: string[] = [];
  const { port } = c.server;
  const { embeddedPort, url } = c.database;
  if (url === undefined && port !== 0 && port === embeddedPort) {
    problems.push(`PORT (server.port) and EMBEDDED_PG_PORT (database.embeddedPort) are both ${port}: the HTTP server and the embedded PostgreSQL cannot listen on one port; set one of them to another port (0 picks a free one).`);
  }
  const { latencyColdBelow, latencyMaxSamples } = c.engine;
  if (latencyColdBelow > latencyMaxSamples) {
    problems.push(
      `LATENCY_COLD_BELOW (engine.latencyColdBelow) = ${latencyColdBelow} is above LATENCY_MAX_SAMPLES (engine.latencyMaxSamples) = ${latencyMaxSamples}: a function never keeps enough samples to stop being cold, so \`fastest\` would explore forever; set LATENCY_COLD_BELOW to at most LATENCY_MAX_SAMPLES.`,
    );
  }
  const { maxAgeDays, observationRetentionDays } = c.verification;
  if (observationRetentionDays < maxAgeDays) {
    problems.push(
      `OBSERVATIONS_RETENTION_DAYS (verification.observationRetentionDays) = ${observationRetentionDays} is below VERIFY_MAX_AGE_DAYS (verification.maxAgeDays) = ${maxAgeDays}: observations verification still reads would be deleted; set OBSERVATIONS_RETENTION_DAYS to at least ${Math.ceil(maxAgeDays)}.`,
    );
  }
  return problems;
}
export type ConfigInput = ConfigOverrides<Config>;
