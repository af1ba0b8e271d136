import { createHmac, timingSafeEqual } from 'node:crypto';
import { randomToken } from '../../../core/ids';

/**
 * Stateless MCP sessions: the id is a signed token carrying its issue time and a keyed digest of its owner, so any
 * instance can check it without shared state. An altered, expired or foreign id is refused (404). The owner (a key id,
 * a person id) is never readable in it: session ids travel in headers that proxies and clients log.
 */
export class McpSessions {
  constructor(
    private readonly secret: Uint8Array,
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  private sign(payload: string): string {
    return createHmac('sha256', this.secret).update(`mcp-session:${payload}`).digest('base64url');
  }

  /** Who the session is for, as only this service can tell: equal for one owner, unreadable to anyone else. */
  private ownerDigest(owner: string): string {
    return createHmac('sha256', this.secret).update(`mcp-session-owner:${owner}`).digest('base64url').slice(0, 22);
  }

  issue(owner: string): string {
    const payload = Buffer.from(JSON.stringify({ t: this.now(), o: this.ownerDigest(owner), n: randomToken(8) })).toString('base64url');
    return `${payload}.${this.sign(payload)}`;
  }

  /** Shaped like an id this service issues (payload.mac, base64url); anything else is not a session id at all. */
  static wellFormed(id: string): boolean {
    return id.length <= 512 && /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(id);
  }

  /**
   * 'ok', or why the id is refused as its holder may be told: 'expired' (its own id, too old), or 'unknown' for an altered
   * id and another owner's alike, so whoever holds someone else's id learns nothing of it.
   */
  check(id: string, owner: string): 'ok' | 'expired' | 'unknown' {
    const [payload, mac] = id.split('.');
    if (!payload || !mac || !/^[A-Za-z0-9_-]+$/.test(payload) || !/^[A-Za-z0-9_-]+$/.test(mac)) return 'unknown';
    const expected = Buffer.from(this.sign(payload));
    const given = Buffer.from(mac);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'unknown';
    let data: { t?: unknown; o?: unknown };
    try {
      data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { t?: unknown; o?: unknown };
    } catch {
      return 'unknown';
    }
    // The owner before the age: another owner's id, however old, tells its holder nothing (not even that it is genuine).
    if (data.o !== this.ownerDigest(owner)) return 'unknown';
    if (typeof data.t !== 'number' || this.now() - data.t > this.ttlMs) return 'expired';
    return 'ok';
  }
}
