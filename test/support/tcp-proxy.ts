import { createConnection, createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';

/**
 * What the proxy does with the bytes of its connections: `pass` both ways; `hold` both ways until
 * `release()` (a frozen server or a partition that heals: nothing is lost, it arrives late);
 * `mute-replies` lets requests through and drops the server's answers (a reply lost after the
 * server acted on the request).
 */
export type ProxyMode = 'pass' | 'hold' | 'mute-replies';

export interface TcpProxy {
  readonly port: number;
  mode: ProxyMode;
  /** `url` with the proxy's host and port in place of the server's. */
  via(url: string): string;
  /** Delivers what `hold` kept, in order, and passes from then on. */
  release(): void;
  /** Cuts every connection open through the proxy. */
  drop(): void;
  /**
   * Passes until a request carrying `marker` (e.g. "COMMIT") has gone through, then mutes replies: the
   * server acts on that request and the client never hears it did.
   */
  muteRepliesAfter(marker: string): void;
  close(): Promise<void>;
}

/** A TCP proxy on a loopback port to `host:port`, for faults between the service and a server of the test's own. */
export async function tcpProxy(host: string, port: number): Promise<TcpProxy> {
  const open = new Set<Socket>();
  const held: Array<() => void> = [];
  let mode: ProxyMode = 'pass';
  let trigger: Buffer | null = null;
  const server: Server = createServer((downstream) => {
    const upstream = createConnection({ host, port });
    for (const s of [downstream, upstream]) {
      open.add(s);
      s.on('error', () => undefined);
      s.on('close', () => open.delete(s));
    }
    const forward = (to: Socket, isReply: boolean) => (chunk: Buffer) => {
      if (mode === 'hold') held.push(() => to.destroyed || to.write(chunk));
      else if (!(isReply && mode === 'mute-replies')) to.write(chunk);
      if (!isReply && trigger && chunk.includes(trigger)) {
        trigger = null;
        mode = 'mute-replies';
      }
    };
    downstream.on('data', forward(upstream, false));
    upstream.on('data', forward(downstream, true));
    downstream.on('close', () => upstream.destroy());
    upstream.on('close', () => downstream.destroy());
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
  const proxyPort = (server.address() as AddressInfo).port;
  const drop = () => {
    for (const s of open) s.destroy();
  };
  return {
    port: proxyPort,
    get mode() {
      return mode;
    },
    set mode(m: ProxyMode) {
      mode = m;
      trigger = null;
    },
    via(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(proxyPort);
      return u.toString();
    },
    release() {
      mode = 'pass';
      for (const deliver of held.splice(0)) deliver();
    },
    drop,
    muteRepliesAfter(marker: string) {
      mode = 'pass';
      trigger = Buffer.from(marker);
    },
    close: () =>
      new Promise<void>((resolve) => {
        drop();
        server.close(() => resolve());
      }),
  };
}
