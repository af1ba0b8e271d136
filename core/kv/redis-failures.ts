/** Why a Redis connection failed, in words an operator can act on, and which failures no retry mends. */

/** Redis answered the command with an error (a script's refusal, a wrong type): Redis is there. */
export function isReplyError(err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError';
}

/**
 * Why a connection attempt failed, in one line: the error's message, else its code, else the
 * reasons inside an AggregateError (a host name with several addresses, each refused).
 */
export function connectionFailure(err: unknown): string {
  if (!(err instanceof Error)) return typeof err === 'string' && err !== '' ? err : 'unknown error';
  // ioredis's words for a server that answered something other than Redis's protocol ("Please report this").
  const foreign = /Protocol error, got "(.*?)" as reply type byte/.exec(err.message);
  if (foreign) return `the server at REDIS_URL does not speak the Redis protocol (its answer began with ${JSON.stringify(foreign[1])}): check the host and port (an HTTP server, say, or TLS where rediss:// is needed)`;
  if (err.message) return err.message;
  const code = (err as NodeJS.ErrnoException).code;
  const inner = err instanceof AggregateError ? err.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).filter((m) => m !== '') : [];
  if (inner.length > 0) return [...new Set(inner)].join('; ');
  return code ?? err.name;
}

/**
 * Redis refused the connection for who it is: its credentials (a wrong password or user, none sent), or a user the ACL
 * does not let run what the service sends first (NOPERM). No retry mends either; null for anything else.
 */
export function authRefusal(reason: string): 'credentials' | 'permission' | null {
  if (/\bNOPERM\b/.test(reason)) return 'permission';
  return /\b(WRONGPASS|NOAUTH)\b|invalid password|invalid username-password/i.test(reason) ? 'credentials' : null;
}

/**
 * Redis refused the database number REDIS_URL names (SELECT: out of the server's `databases`, or SELECT not
 * allowed, as in a cluster). ioredis reports it as an error and then reports the connection ready on database 0,
 * where the service would share another database's keys; the reason in Redis's words, or null for anything else.
 */
export function databaseRefusal(err: unknown): string | null {
  if (!isReplyError(err)) return null;
  return (err as { command?: { name?: string } }).command?.name === 'select' ? connectionFailure(err) : null;
}
