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

/** pg's own errors for a lost or unobtainable connection carry no code, only these messages. */
const LOST_CONNECTION = /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect|Query read timeout)/;

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

/** Failures of reaching the database at all: the statement was never sent. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const NOT_SENT = /^(timeout exceeded when trying to connect|Connection terminated due to connection timeout)/;

/**
 * Whether a statement that failed with `err` may still have committed. The database answered with
 * an error (a refusal, its own statement timeout, too many connections): it did not. The connection
 * broke or was given up on after sending it (reset, terminated, no answer within
 * DB_ANSWER_GRACE_MS, the server shutting the session down): the commit may have happened with
 * its answer lost, or may still happen when the server wakes up.
 */
export function mayHaveCommitted(err: unknown): boolean {
  const { code, message } = (typeof err === 'object' && err !== null ? err : {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code.startsWith('08') || code === '57P01' || code === '57P02';
  if (typeof code === 'string' && NOT_SENT_CODES.has(code)) return false;
  return !(typeof message === 'string' && NOT_SENT.test(message));
}
