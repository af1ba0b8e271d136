import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { ApiError, errorBody } from '../errors';
import { newSortableId } from '../ids';
import type { Logger } from '../logger';

/** The codes a parser refusal is answered with (below), each counted from the start. */
export const PARSER_REFUSAL_CODES = ['bad_request', 'headers_too_large', 'request_timeout'] as const;

/**
 * The answer to a request Node's HTTP parser refused before any route saw it (a control character
 * in a header, headers over the size limit, a request that never finished arriving): SPEC's error
 * shape instead of Node's bare status line, then the connection is closed as Node would. It gets a
 * request id like any answer (body and X-Request-Id, logged with the refusal), so a caller can quote it.
 */
export function clientErrorHandler(maxHeaderBytes: number, log?: Logger, onRefused?: (code: (typeof PARSER_REFUSAL_CODES)[number]) => void) {
  return (err: Error & { code?: string }, socket: Duplex): void => {
    // Nothing to answer on a connection already gone, or one whose response has begun.
    if (err.code === 'ECONNRESET' || !socket.writable || (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent) {
      socket.destroy();
      return;
    }
    const apiErr =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large', 'The request headers are too large.', { hint: `Keep the request line and headers together under ${maxHeaderBytes} bytes (a long User-Agent, cookie or custom header is the usual cause).` })
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? new ApiError('request_timeout', 'The request did not arrive in time.', { hint: 'Send the whole request without pausing; retry it.' })
          : new ApiError('bad_request', 'The request is not valid HTTP/1.1 (for example a control character or a space in a header, or a malformed request line).', {
              hint: 'Send header names as tokens and header values as visible ASCII (encode other text, e.g. percent-encoding); retry with a well-formed request.',
            });
    // The headers were not read, so an X-Request-Id sent is not taken up: the id is always a new one.
    const requestId = newSortableId('req');
    log?.info({ req_id: requestId, status: apiErr.status, code: apiErr.code, parser_error: err.code }, 'request refused by the HTTP parser');
    onRefused?.(apiErr.code as (typeof PARSER_REFUSAL_CODES)[number]);
    const body = JSON.stringify(errorBody(apiErr, requestId));
    socket.end(
      `HTTP/1.1 ${apiErr.status} ${STATUS_CODES[apiErr.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  };
}
