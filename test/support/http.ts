export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as-is (for malformed bodies). */
  rawBody?: string;
  headers?: Record<string, string>;
}

/** Plain HTTP against a running instance: what a user's program would send. */
export async function call<T = Record<string, unknown>>(baseUrl: string, method: string, path: string, opts: CallOptions = {}): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(baseUrl + path, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export function client(baseUrl: string, defaults: Record<string, string> = {}) {
  return {
    get: <T = Record<string, unknown>>(path: string, headers: Record<string, string> = {}) => call<T>(baseUrl, 'GET', path, { headers: { ...defaults, ...headers } }),
    post: <T = Record<string, unknown>>(path: string, body?: unknown, headers: Record<string, string> = {}) =>
      call<T>(baseUrl, 'POST', path, { body, headers: { ...defaults, ...headers } }),
    patch: <T = Record<string, unknown>>(path: string, body?: unknown, headers: Record<string, string> = {}) =>
      call<T>(baseUrl, 'PATCH', path, { body, headers: { ...defaults, ...headers } }),
    put: <T = Record<string, unknown>>(path: string, body?: unknown, headers: Record<string, string> = {}) =>
      call<T>(baseUrl, 'PUT', path, { body, headers: { ...defaults, ...headers } }),
    delete: <T = Record<string, unknown>>(path: string, headers: Record<string, string> = {}) => call<T>(baseUrl, 'DELETE', path, { headers: { ...defaults, ...headers } }),
    raw: <T = Record<string, unknown>>(method: string, path: string, opts: CallOptions = {}) =>
      call<T>(baseUrl, method, path, { ...opts, headers: { ...defaults, ...opts.headers } }),
  };
}
