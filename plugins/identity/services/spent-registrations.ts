import { limitAddress } from '../../../core/address';
import { ExpiringMap } from '../../../core/bounded-map';
import type { Clock } from '../../../core/clock';
import { utcDay, utcDayStart } from '../../../core/daily-quota';
import type { KvStore, Unsubscribe } from '../../../core/kv';

const CHANNEL = 'identity:registrations-spent';

type Spent = { address: string; day: string } | { overall: true; day: string };

/**
 * The addresses whose registrations for the UTC day are spent (and whether the whole service's are), so nothing offers
 * that caller a registration it would refuse 429 (SPEC: next_actions are requests the caller may make). Kept in process
 * and told to every instance through the store's channel when a count is spent, so asking costs a map lookup, never a
 * store or database read on the paths that offer registration (the keyless demo, 401s). What a store did not deliver
 * (a restart of the in-process store, a lost subscription) is forgotten: registration is offered again until the next
 * refusal marks the address, which is the answer that caller got before this existed.
 */
export class SpentRegistrations {
  private readonly addresses: ExpiringMap<string, true>;
  private overallUntil = 0;
  private unsubscribe: Unsubscribe | null = null;

  constructor(
    private readonly kv: KvStore,
    private readonly clock: Clock,
    private readonly ipv6Prefix: () => number,
    maxAddresses: number,
  ) {
    this.addresses = new ExpiringMap(maxAddresses, () => clock.now());
  }

  async start(): Promise<void> {
    this.unsubscribe = await this.kv.subscribe(CHANNEL, (msg) => this.apply(JSON.parse(msg) as Spent));
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  /** Whether a caller at `ip` (clientIp) would be refused a registration today, as far as this instance has heard. */
  spent(ip: string): boolean {
    if (this.overallUntil > this.clock.now()) return true;
    return this.addresses.size > 0 && this.addresses.get(limitAddress(ip, this.ipv6Prefix())) === true;
  }

  /** Marks `address` (already a limitAddress, as the quota counts it), or the whole service, spent until 00:00 UTC. */
  async mark(scope: { address: string } | { overall: true }): Promise<void> {
    const spent: Spent = { ...scope, day: utcDay(this.clock.now()) };
    this.apply(spent);
    // Best effort: an offer left standing on another instance costs its caller one 429, a failed publish the request.
    await this.kv.publish(CHANNEL, JSON.stringify(spent)).catch(() => undefined);
  }

  private apply(spent: Spent): void {
    const now = this.clock.now();
    // A message of another day (a clock apart, a late delivery) would mark today spent for nothing.
    if (spent.day !== utcDay(now)) return;
    const ttlMs = utcDayStart(now).getTime() + 86_400_000 - now;
    if ('overall' in spent) this.overallUntil = now + ttlMs;
    else this.addresses.set(spent.address, true, ttlMs);
  }
}
