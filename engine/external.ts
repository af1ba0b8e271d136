import { z } from 'zod';
import { CURRENCY_CODE } from '../core/money';
import { OutboundBlockedError, OutboundError } from '../core/outbound/safe-http-client';
import type { SafeHttpClient } from '../core/outbound/safe-http-client';
import { D, MAX_AMOUNT, currencyOf, smallestUnitText, toPrice } from './builtins/inputs';
import type { Dec } from './builtins/inputs';
import type { Context, MethodResult } from './builtins/types';
import type { FunctionDescriptor } from './functions';

/**
 * The longest note an endpoint's answer may carry, in characters: the most of an endpoint's own words a caller is shown, in a
 * note and in the quote of a refusal's reason alike.
 */
export const NOTE_MAX_CHARS = 500;

/**
 * What an owner's endpoint must answer: a positive price and a confidence in [0, 1]. An optional field sent as null reads
 * as absent, like a missing key (the service's rule for null elsewhere): serializers commonly write null for what is
 * unset, and such an answer is a price, not a failure that would open the function's breaker.
 */
export const externalAnswer = z.object({
  // A decimal string of zero ("0.00") is no positive price either: the same rule as the number 0.
  price: z.union([z.number().positive().finite(), z.string().regex(/^\d+(\.\d+)?$/).refine((p) => /[1-9]/.test(p))]),
  currency: z.string().regex(CURRENCY_CODE).nullish(),
  confidence: z.number().min(0).max(1),
  notes: z.array(z.string().max(NOTE_MAX_CHARS)).max(20).nullish(),
  details: z.record(z.string(), z.unknown()).nullish(),
});

/**
 * `blocked`: the guarded client will not call the registered address (a private, loopback or
 * metadata target, a port or scheme the operator does not allow): no retry changes that, only the
 * owner's PATCH of endpoint_url or the operator's settings. `declined`: the endpoint answered that
 * it does not price this context (`DECLINING_STATUSES`, or a price in another currency than the
 * context asks for): the context's fault, as a built-in's MethodNotApplicable, not the function's.
 */
export class ExternalFunctionError extends Error {
  constructor(
    readonly kind: 'blocked' | 'timeout' | 'upstream' | 'invalid_response' | 'declined',
    message: string,
    /**
     * What callers other than the owner hear: the kind of failure without the registered address
     * (a host name, an internal port or path, a redirect's target), which is the owner's business.
     */
    readonly forOthers: string = message,
    /** A declined context's keys the endpoint would not price as given (`currency`), when the answer names one. */
    readonly inputs: readonly string[] = [],
    /** The wait the endpoint asked for with its failure (Retry-After), at most MAX_UPSTREAM_RETRY_AFTER_S. */
    readonly retryAfterS?: number,
    /** An `upstream` failure's kind, for the attempt's machine-readable `failure`. */
    readonly upstream?: 'http_status' | 'redirect' | 'not_json' | 'too_large' | 'connection',
  ) {
    super(message);
    this.name = 'ExternalFunctionError';
  }
}

/** Each field of an endpoint's answer, as a refusal of it states the rule (`externalAnswer`). */
const ANSWER_RULES: Record<string, string> = {
  price: 'a positive number or a decimal string such as "12.50"',
  currency: 'a currency code of 3 to 5 letters such as "USD"',
  confidence: 'a number between 0 and 1',
  notes: `a list of at most 20 strings of at most ${NOTE_MAX_CHARS} characters each`,
  details: 'an object',
};

/** Why an endpoint's answer is not a price: each wrong field with its rule, in the schema's order (zod's own wording names neither). */
function notAPrice(error: z.ZodError, body: unknown): string {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return 'it must be a JSON object such as {"price": 12.5, "confidence": 0.8}';
  const fields = [...new Set(error.issues.map((i) => String(i.path[0] ?? '')))];
  return fields
    .map((field) => {
      const rule = ANSWER_RULES[field] ?? 'as documented';
      // null reads as absent (an optional field may be null): a required one sent as null is missing, not malformed.
      return (body as Record<string, unknown>)[field] == null ? `${field}: required, ${rule}` : `${field}: must be ${rule}`;
    })
    .join('; ');
}

/**
 * Statuses by which an endpoint refuses the context it was sent: a malformed or unpriceable context
 * (400, 422), nothing to price for it (404: an unknown product as much as a wrong path, which the
 * service cannot tell apart), a context too large (413). Any caller chooses the context, so counting
 * these against the function would let anyone open its breaker for everyone. Every other status
 * (401, 403, 405, 410, 429, 5xx…) says something of the function or its endpoint, and stays a failure.
 */
export const DECLINING_STATUSES: readonly number[] = [400, 404, 413, 422];

/** Control and bidirectional-formatting characters: a quote is one line of the endpoint's words, never layout or a disguise. */
const UNQUOTABLE = /[\p{Cc}\u200E\u200F\u202A-\u202E\u2066-\u2069]+/gu;

/** The reason a JSON refusal gives in the fields frameworks and authors use for one: `error` (or its `message`), `message`, `detail`. */
function reasonIn(body: unknown): unknown {
  if (typeof body === 'string') return body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const b = body as Record<string, unknown>;
  const error = b.error !== null && typeof b.error === 'object' && !Array.isArray(b.error) ? (b.error as Record<string, unknown>).message : b.error;
  return [error, b.message, b.detail].find((v) => typeof v === 'string' && v.trim() !== '');
}

/** The registered address's parts a quote leaves out (longest first): the endpoint's answer may name where it runs. */
function addressParts(endpointUrl: string): string[] {
  try {
    const url = new URL(endpointUrl);
    return [endpointUrl, url.origin, url.host, url.hostname, url.pathname.length > 1 ? url.pathname : ''].filter((p) => p !== '').sort((a, b) => b.length - a.length);
  } catch {
    return [endpointUrl];
  }
}

/**
 * The reason an endpoint gave with its refusal of a context, fit to quote to any caller: the `error`, `message` or `detail`
 * string of a JSON answer, or a plain-text answer; one line (control characters taken out), at most NOTE_MAX_CHARS, the
 * registered address left out (the owner's business, as every failure told to others keeps it). None from an answer
 * that states no reason so (empty, an HTML page, an object of other fields); the answer's headers are never quoted.
 */
export function refusalReason(answer: OutboundError['answer'], endpointUrl: string): string | undefined {
  const text = answer?.text.trim() ?? '';
  if (text === '') return undefined;
  let said: unknown;
  try {
    said = reasonIn(JSON.parse(text) as unknown);
  } catch {
    // Text that is not JSON is quoted when it is meant as text: no markup (an error page), no other declared type.
    said = !text.startsWith('<') && (answer?.type === undefined || /^text\/plain\b/i.test(answer.type)) ? text : undefined;
  }
  if (typeof said !== 'string') return undefined;
  let line = said.replace(UNQUOTABLE, ' ');
  for (const part of addressParts(endpointUrl)) line = line.replace(new RegExp(part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'gi'), '(its address)');
  const chars = Array.from(line.replace(/\s+/g, ' ').trim());
  if (chars.length === 0) return undefined;
  return chars.length > NOTE_MAX_CHARS ? `${chars.slice(0, NOTE_MAX_CHARS - 1).join('').trimEnd()}…` : chars.join('');
}

/** The wording of a refusal by status, quoting the endpoint's reason when it gave one. */
const refusedWording = (status: number, reason: string | undefined): string => `The endpoint refused this context (HTTP ${status})${reason === undefined ? '' : `, saying ${JSON.stringify(reason)}`}.`;

/** Whether an attempt's error quotes the reason its endpoint gave with a refusal (refusedWording). */
export const quotesRefusal = (error: string | undefined): boolean => /^The endpoint refused this context \(HTTP \d+\), saying "/.test(error ?? '');

/**
 * The longest wait an endpoint's Retry-After is passed on with (seconds): a caller is not told to stay away for an hour
 * because one endpoint said so, when a retry may be answered by another function, or by this one sooner.
 */
export const MAX_UPSTREAM_RETRY_AFTER_S = 300;

/** A connection the endpoint closed (or reset) before its answer was complete: Node says "socket hang up". */
const CLOSED_EARLY = 'The endpoint closed the connection before answering.';
/** The same once its answer had begun (a status sent, the body cut short). */
const cutShort = (status: number): string => `The endpoint closed the connection in the middle of its answer (HTTP ${status} begun, its body cut short).`;
const closedEarly = (err: unknown): err is OutboundError => err instanceof OutboundError && err.kind === 'network' && err.code === 'ECONNRESET';
const closedWording = (err: OutboundError): string => (err.status === undefined ? CLOSED_EARLY : cutShort(err.status));

/** TLS failures by their system code: OpenSSL's own text (file and line of its sources) tells an owner little. */
const TLS_CODE = /^(EPROTO|ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|ERR_OSSL_)/;

/**
 * A network failure in its owner's words, by its system code; the address is in them only where the code alone
 * would not say which (DNS). Anything unrecognised keeps the runtime's message.
 */
export function networkFailure(err: OutboundError): string {
  const code = err.code ?? '';
  if (code === 'ECONNRESET') return closedWording(err);
  if (code === 'ECONNREFUSED') return 'The endpoint refused the connection (ECONNREFUSED): nothing accepts connections at its address and port.';
  if (code === 'ENOTFOUND') {
    const host = /ENOTFOUND (\S+)/.exec(err.message)?.[1];
    return `The endpoint's host name does not resolve (ENOTFOUND${host ? `: ${host}` : ''}).`;
  }
  if (code === 'EAI_AGAIN') return "The endpoint's host name could not be resolved just now (EAI_AGAIN, a DNS failure that may pass).";
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `The endpoint's address is unreachable (${code}).`;
  // llhttp's refusals of what the endpoint sent ("Parse Error: Header overflow"): its answer is no HTTP the service reads.
  if (code === 'HPE_HEADER_OVERFLOW') return "The endpoint's answer headers are larger than the service reads (HPE_HEADER_OVERFLOW; Node's limit, 16 KB by default).";
  if (code.startsWith('HPE_')) return `The endpoint's answer is not valid HTTP (${code}${err.message ? `: ${err.message.replace(/^Parse Error: /, '').slice(0, 120)}` : ''}).`;
  if (TLS_CODE.test(code)) {
    const plain = /wrong version number|packet length too long|http request/i.test(err.message) ? ': the address may serve plain http where https was registered' : '';
    return `The TLS handshake with the endpoint failed (${code})${plain || (code === 'EPROTO' ? '' : `: ${err.message.split('\n')[0]?.slice(0, 200) ?? ''}`)}.`;
  }
  return err.message;
}

/** An endpoint failure's kind, from the guarded client's error. */
function upstreamKind(err: unknown): ExternalFunctionError['upstream'] {
  if (!(err instanceof OutboundError)) return 'connection';
  switch (err.kind) {
    case 'status':
      return 'http_status';
    case 'redirect':
      return 'redirect';
    case 'invalid_json':
      return 'not_json';
    case 'too_large':
      return 'too_large';
    default:
      return 'connection';
  }
}

/** The owner-neutral wording of a failed call to an endpoint. */
function withoutAddress(err: unknown, timeoutMs: number): string {
  if (err instanceof OutboundBlockedError || (err instanceof OutboundError && err.kind === 'protocol')) return "The function's registered address is refused by this service's outbound guard; only its owner can change it.";
  if (closedEarly(err)) return closedWording(err);
  if (!(err instanceof OutboundError)) return 'The endpoint could not be reached.';
  switch (err.kind) {
    case 'timeout':
      return `The endpoint did not answer within ${timeoutMs} ms.`;
    case 'status':
      return `The endpoint answered HTTP ${err.status ?? '?'}.`;
    case 'redirect':
      return err.status === 304 ? 'The endpoint answered 304 Not Modified, which answers no POST.' : `The endpoint answered with a redirect (${err.status ?? '3xx'}), which is not followed.`;
    case 'too_large':
      return "The endpoint's answer was too large.";
    case 'invalid_json':
      return "The endpoint's answer is not JSON.";
    default:
      return 'The endpoint could not be reached.';
  }
}

/**
 * An endpoint's price in the currency's minor units, within the amounts a built-in may quote: one
 * that rounds to nothing, or passes MAX_AMOUNT, is no answer, and is refused saying which.
 */
function quotable(price: Dec, currency: string): string {
  const quoted = toPrice(price, currency);
  const said = price.toSignificantDigits(6).toString();
  if (new D(quoted).lte(0)) {
    throw new ExternalFunctionError('invalid_response', `The endpoint's price ${said} ${currency} rounds to nothing in ${currency}'s smallest unit (${smallestUnitText(currency)}).`);
  }
  if (new D(quoted).gt(MAX_AMOUNT)) throw new ExternalFunctionError('invalid_response', `The endpoint's price ${said} ${currency} is above the largest quotable amount (${MAX_AMOUNT.toFixed()}).`);
  return quoted;
}

/** The headers that sign one request of a function to its endpoint, from the exact body sent; none for an unsigned function. */
export type RequestSigner = (fn: FunctionDescriptor) => ((body: Buffer) => Record<string, string>) | undefined;

/**
 * Calls the address a function's owner registered: JSON in (`{context, function}`), JSON out,
 * through the guarded client, with a timeout and a validated answer.
 */
export class ExternalExecutor {
  constructor(
    private readonly client: SafeHttpClient,
    private readonly signer: RequestSigner = () => undefined,
  ) {}

  async run(fn: FunctionDescriptor, context: Context, timeoutMs: number): Promise<MethodResult> {
    if (!fn.endpointUrl) throw new ExternalFunctionError('upstream', 'The function has no endpoint.');
    let body: unknown;
    try {
      const sign = this.signer(fn);
      ({ body } = await this.client.postJson(fn.endpointUrl, { context, function: { id: fn.id, name: fn.name } }, { timeoutMs, ...(sign ? { sign } : {}) }));
    } catch (err) {
      const forOthers = withoutAddress(err, timeoutMs);
      if (err instanceof OutboundBlockedError || (err instanceof OutboundError && err.kind === 'protocol')) throw new ExternalFunctionError('blocked', err.message, forOthers);
      if (err instanceof OutboundError && err.kind === 'timeout') throw new ExternalFunctionError('timeout', err.message, forOthers);
      if (err instanceof OutboundError && err.kind === 'status' && err.status !== undefined && DECLINING_STATUSES.includes(err.status)) {
        const said = refusedWording(err.status, refusalReason(err.answer, fn.endpointUrl));
        throw new ExternalFunctionError('declined', said, said);
      }
      const asked = err instanceof OutboundError && err.retryAfterS !== undefined ? Math.min(err.retryAfterS, MAX_UPSTREAM_RETRY_AFTER_S) : undefined;
      throw new ExternalFunctionError('upstream', err instanceof OutboundError && err.kind === 'network' ? networkFailure(err) : (err as Error).message, forOthers, [], asked, upstreamKind(err));
    }
    const parsed = externalAnswer.safeParse(body);
    if (!parsed.success) throw new ExternalFunctionError('invalid_response', `The endpoint's answer is not a price: ${notAPrice(parsed.error, body)}.`);
    const asked = currencyOf(context);
    const currency = parsed.data.currency?.toUpperCase() ?? asked;
    // A price in another currency than the one asked for is no answer to the question (and would be quoted as if it were);
    // the endpoint prices in its own currency, and the context asked for another: the context's doing, not the function's.
    if (currency !== asked) throw new ExternalFunctionError('declined', `The endpoint answered in ${currency}; the context asks for ${asked}.`, undefined, ['currency']);
    return {
      price: quotable(new D(parsed.data.price), currency),
      currency,
      confidence: parsed.data.confidence,
      confidence_factors: { reported_by_function: parsed.data.confidence },
      inputs_used: [],
      notes: parsed.data.notes ?? [],
      ...(parsed.data.details ? { details: parsed.data.details } : {}),
    };
  }
}
