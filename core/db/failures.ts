import { ConnectionError } from 'sequelize';
import { UNAVAILABLE_RETRY_AFTER_S, serviceUnavailable } from '../errors';
import type { ApiError } from '../errors';

/**
 * SQLSTATEs of a database that did not answer in time or is going away, not of a statement it
 * refused: statement timeout (57014), administrator shutdown, crash, cannot connect now (57P01-03),
 * too many connections (53300); the whole class 08 (connection exception) is added below.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57014', '57P01', '57P02', '57P03', '53300']);

/** Socket failures of a connection to the database (pg passes them on as they are). */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** node-postgres's message when query_timeout passes without an answer. */
const QUERY_READ_TIMEOUT = 'Query read timeout';

/**
 * pg's own errors for a lost or unobtainable connection carry no code, only these messages
 * ('timeout expired': a connection not opened within DB_CONNECT_TIMEOUT_MS).
 */
const LOST_CONNECTION = /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect|Query read timeout|timeout expired$)/;

function isUnavailableItself(err: object): boolean {
  // Every connection failure Sequelize reports: refused, timed out, host not found, acquire timeout…
  if (err instanceof ConnectionError) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || SOCKET_CODES.has(code))) return true;
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && LOST_CONNECTION.test(message);
}

/**
 * Whether `err` says the database is unreachable or too slow, as pg raises it or as Sequelize wraps
 * it (`parent`/`original` hold pg's error): a retry later can succeed. A statement the database
 * refused (a constraint, a syntax error, a missing table) is not.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  let e: unknown = err;
  // Sequelize wraps once; `cause` is not followed, so another component's error holding a socket
  // failure (an outbound call's) is not taken for the database's.
  for (let depth = 0; depth < 3 && typeof e === 'object' && e !== null; depth++) {
    if (isUnavailableItself(e)) return true;
    const wrapped = e as { parent?: unknown; original?: unknown };
    e = wrapped.parent ?? wrapped.original;
  }
  return false;
}

/** The answer to a request the database could not serve (503, retryable, Retry-After). */
export function databaseUnavailable(): ApiError {
  return serviceUnavailable(
    'The request could not be completed: the database did not answer.',
    `The database is not reachable or did not answer in time; retry in ${UNAVAILABLE_RETRY_AFTER_S} s.`,
  );
}

/** A value the database refused (SQLSTATE class 22 or 23: data exception, integrity violation), not the statement or the connection. */
export function isValueRefusal(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^2[23]/.test(code);
}

/** node-postgres gave up waiting for the answer to a statement (query_timeout), raw or wrapped by Sequelize. */
export function isUnansweredStatement(err: unknown): boolean {
  const e = err as { message?: unknown; parent?: { message?: unknown } } | null;
  return e?.message === QUERY_READ_TIMEOUT || e?.parent?.message === QUERY_READ_TIMEOUT;
}

/** Socket failures of a connection that was open: what was sent may have been acted on. */
const BROKEN_AFTER_SEND_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/** pg's own errors for a connection lost, or given up on (query_timeout), while a statement was out. */
const BROKEN_AFTER_SEND = /^(Connection terminated unexpectedly|Connection terminated$|Query read timeout)/;

function brokenAfterSend(err: unknown): boolean {
  const { code, message } = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; message?: unknown };
  // Before SQLSTATEs: EPIPE has their shape.
  if (typeof code === 'string' && BROKEN_AFTER_SEND_CODES.has(code)) return true;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || code === '57P01' || code === '57P02';
  return typeof message === 'string' && BROKEN_AFTER_SEND.test(message);
}

/**
 * Whether a statement that failed with `err` (node-postgres's error, or Sequelize's wrapping it as
 * `parent`) may still have committed: only failures known to happen after it was sent. The
 * connection broke (reset, terminated, the server shutting the session down: SQLSTATE class 08,
 * 57P01, 57P02) or got no answer within DB_STATEMENT_TIMEOUT_MS + DB_ANSWER_GRACE_MS: the commit may
 * have happened with its answer lost, or may still happen when a frozen server wakes up. Anything
 * else did not commit: the database answered with an error (a refusal, its own statement timeout,
 * too many connections), nothing was sent (no connection, a parameter that could not be
 * serialised, a closed pool), or the statement was a SELECT, which changes nothing.
 */
export function mayHaveCommitted(err: unknown): boolean {
  const wrapped = err as { parent?: { sql?: unknown }; sql?: unknown } | null;
  const sql = wrapped?.sql ?? wrapped?.parent?.sql;
  if (typeof sql === 'string' && /^\s*SELECT\b/i.test(sql)) return false;
  return brokenAfterSend(err) || brokenAfterSend(wrapped?.parent);
}
