import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo, Server as TcpServer } from 'node:net';
import type { Resolver } from '../../core/outbound/safe-http-client';

/**
 * Real-socket fixtures for the outbound guard. SSRF tests never use nock: nock intercepts below the
 * guard's connection-time checks, so a "blocked" result there would prove nothing.
 */

function listenTcp(server: TcpServer | HttpServer, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: TcpServer | HttpServer): Promise<void> {
  if ('closeAllConnections' in server) server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface Canary {
  /** Port the canary listens on, on every address in `hosts`. */
  port: number;
  /** Loopback addresses actually bound (the first one always; others where the system allows). */
  hosts: string[];
  /** Connections accepted so far, on any bound address. */
  connections(): number;
  /** Local address of each accepted connection, for failure messages. */
  seen: string[];
  close(): Promise<void>;
}

export interface CanaryOptions {
  /** The first must bind; the others are bound where the system has them. */
  hosts?: readonly string[];
  /** Default: a free port (the same on every host). */
  port?: number;
}

const codeOf = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;

export const CANARY_HOSTS = ['127.0.0.1', '127.0.0.2', '127.255.255.254', '127.127.127.127', '127.0.1.3', '127.1.1.1', '::1'] as const;

/**
 * A TCP listener that only counts connections. By default it binds 127.0.0.1 and, on the same
 * port, other loopback addresses (127.0.0.2, ::1, ...) so that a request slipping through to any
 * of them is seen too. It binds only loopback addresses, never a wildcard.
 */
export async function startCanary(opts: CanaryOptions = {}): Promise<Canary> {
  const [first, ...others] = opts.hosts ?? CANARY_HOSTS;
  if (first === undefined) throw new Error('a canary needs at least one host');
  for (let attempt = 0; attempt < 10; attempt++) {
    const servers: TcpServer[] = [];
    const seen: string[] = [];
    const make = () => {
      const s = createTcpServer((socket) => {
        seen.push(`${socket.localAddress ?? '?'}:${socket.localPort ?? '?'}`);
        socket.destroy();
      });
      servers.push(s);
      return s;
    };
    const port = await listenTcp(make(), first, opts.port ?? 0);
    const hosts = [first];
    let retry = false;
    for (const host of others) {
      try {
        await listenTcp(make(), host, port);
        hosts.push(host);
      } catch (err) {
        servers.pop();
        if (codeOf(err) === 'EADDRINUSE' && opts.port === undefined) {
          retry = true;
          break;
        }
        // EADDRNOTAVAIL / EAFNOSUPPORT: this system has no such loopback address; skip it.
      }
    }
    if (retry) {
      await Promise.all(servers.map(closeServer));
      continue;
    }
    return { port, hosts, seen, connections: () => seen.length, close: async () => void (await Promise.all(servers.map(closeServer))) };
  }
  throw new Error('could not bind a canary port on every loopback address');
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type UpstreamHandler = (req: ReceivedRequest, res: ServerResponse) => void;

export interface Upstream {
  port: number;
  host: string;
  url(path?: string): string;
  requests: ReceivedRequest[];
  connections(): number;
  close(): Promise<void>;
}

/** A real HTTP server on a loopback address; records every request and connection. */
export async function startUpstream(handler: UpstreamHandler, host = '127.0.0.1', port = 0): Promise<Upstream> {
  const requests: ReceivedRequest[] = [];
  let connections = 0;
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const received: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(received);
      handler(received, res);
    });
  });
  server.on('connection', () => connections++);
  const bound = await listenTcp(server, host, port);
  const authority = host.includes(':') ? `[${host}]` : host;
  return {
    port: bound,
    host,
    url: (path = '/') => `http://${authority}:${bound}${path}`,
    requests,
    connections: () => connections,
    close: () => closeServer(server),
  };
}

export const sendJson = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

export interface StubResolver {
  resolve: Resolver;
  /** How many times each name was looked up (a lookup happens at connection time). */
  calls: Map<string, number>;
}

/**
 * A resolver answering from a table, never from the network. An entry may be a function of the
 * call number (1, 2, ...) to answer differently each time (DNS rebinding). Unknown names fail
 * like NXDOMAIN.
 */
export function stubResolver(table: Record<string, string[] | ((n: number) => string[])>): StubResolver {
  const calls = new Map<string, number>();
  const resolve: Resolver = async (hostname) => {
    const n = (calls.get(hostname) ?? 0) + 1;
    calls.set(hostname, n);
    const entry = table[hostname];
    if (entry === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return typeof entry === 'function' ? entry(n) : entry;
  };
  return { resolve, calls };
}
