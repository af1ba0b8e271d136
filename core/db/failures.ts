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
const LOST_CONNECTION = /^(Connection terminated|Client has encountered a connection error|Client was closed and is not queryable|timeout exceeded when trying to connect)/;

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
