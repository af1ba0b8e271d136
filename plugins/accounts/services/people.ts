import type { Config } from '../../../config';
import { addressDigests, limitAddress } from '../../../core/address';
import type { Clock } from '../../../core/clock';
import { countDaily } from '../../../core/daily-quota';
import type { DailyCount } from '../../../core/daily-quota';
import { isUniqueViolation } from '../../../core/db/sql';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { newId } from '../../../core/ids';
import type { KvStore } from '../../../core/kv';
import type { Transaction } from 'sequelize';
import type { Workspaces, WorkspaceRow } from '../../identity';
import { DUMMY_HASH, hashPassword, verifyPassword } from './passwords';

export interface PersonRow {
  id: string;
  email: string | null;
  email_verified: boolean;
  password_hash: string | null;
  display_name: string;
  date_of_birth: string | null;
  status: 'active' | 'suspended' | 'rejected' | 'restricted';
  default_workspace_id: string | null;
  created_at: Date;
}

export interface MembershipView {
  workspace_id: string;
  name: string;
  role: 'owner' | 'admin' | 'member';
  plan: string;
  is_test: boolean;
}

function emailTaken(): ApiError {
  return new ApiError('conflict', 'An account with this email already exists.', { hint: 'Sign in at POST /api/auth/signin.' });
}

/** Whole years between a date of birth (YYYY-MM-DD) and now. */
export function ageOn(dateOfBirth: string, now: number): number {
  const dob = new Date(`${dateOfBirth}T00:00:00Z`);
  const today = new Date(now);
  let age = today.getUTCFullYear() - dob.getUTCFullYear();
  const m = today.getUTCMonth() - dob.getUTCMonth();
  if (m < 0 || (m === 0 && today.getUTCDate() < dob.getUTCDate())) age--;
  return age;
}

/** People: sign-up, password sign-in, wallet accounts, memberships. */
export class People {
  constructor(
    private readonly sql: Sql,
    private readonly kv: KvStore,
    private readonly workspaces: Workspaces,
    private readonly clock: Clock,
    private readonly config: Config,
  ) {}

  assertOldEnough(dateOfBirth: string): void {
    const min = this.config.limits.minUserAge;
    if (ageOn(dateOfBirth, this.clock.now()) < min) {
      throw new ApiError('forbidden', `Accounts are for people aged ${min} or over.`, { fields: { reason: 'minimum age' }, hint: `The service is only available to people aged ${min} or over.` });
    }
  }

  /**
   * Counts a sign-up against the per-address and overall daily limits (SIGNUPS_PER_ADDRESS_PER_DAY,
   * SIGNUPS_PER_DAY), or refuses it with 429 daily_quota_exceeded, as registrations are counted.
   */
  private async countSignup(address: string): Promise<DailyCount> {
    const { perAddressPerDay, overallPerDay } = this.config.limits.signups;
    return countDaily(this.kv, this.clock.now(), {
      what: 'sign-up',
      counter: 'signup',
      address,
      perAddressPerDay,
      overallPerDay,
      recordedForAddress: async (since) =>
        (await this.sql.one<{ n: number }>('SELECT count(*)::int AS n FROM people WHERE signed_up_from_hash = ANY($1) AND created_at >= $2', [addressDigests(address), since]))?.n ?? 0,
      recordedOverall: async (since) => (await this.sql.one<{ n: number }>('SELECT count(*)::int AS n FROM people WHERE created_at >= $1', [since]))?.n ?? 0,
      addressHint: (retryAfter) =>
        `The quota resets at 00:00 UTC, in ${retryAfter} s. Already have an account? Sign in (POST /api/auth/signin, or POST /api/auth/wallet/signin with its wallet); to join a team, accept its invitation with the account you have.`,
      overallHint: (retryAfter) => `The quota resets at 00:00 UTC, in ${retryAfter} s. Existing accounts sign in as usual meanwhile.`,
    });
  }

  /**
   * A new person with their workspace (owner) and its test workspace, counted against the daily
   * sign-up limits of `ip` (the caller's address) and of the service. With `wallet`, the wallet is
   * linked in the same transaction, so two first sign-ins of one wallet cannot both create an
   * account: the second fails on the link's unique address and leaves nothing behind (nor a count).
   * `signIn` runs in that transaction too (the first session): a sign-up answered 500 leaves no
   * account behind for its retry to find taken.
   */
  async create<S>(
    input: { email?: string | null; password?: string | null; displayName: string; dateOfBirth: string; workspaceName?: string | undefined; wallet?: string; ip: string },
    signIn: (person: PersonRow, tx: Transaction) => Promise<S>,
  ): Promise<{ person: PersonRow; workspace: WorkspaceRow; session: S }> {
    this.assertOldEnough(input.dateOfBirth);
    // The record keeps the address the limit counts under (an IPv6 caller's network), so a restart counts it again.
    const address = limitAddress(input.ip, this.config.limits.rateLimit.ipv6Prefix);
    const counted = await this.countSignup(address);
    try {
      return await this.insert(input, addressDigests(address)[0] ?? null, signIn);
    } catch (err) {
      // A sign-up that created nothing (the email taken, a wallet's concurrent first sign-in) does not
      // count. Best effort: a count the store does not take back is one sign-up fewer for the day.
      await counted.release().catch(() => undefined);
      throw err;
    }
  }

  private async insert<S>(
    input: { email?: string | null; password?: string | null; displayName: string; dateOfBirth: string; workspaceName?: string | undefined; wallet?: string },
    signedUpFromHash: string | null,
    signIn: (person: PersonRow, tx: Transaction) => Promise<S>,
  ): Promise<{ person: PersonRow; workspace: WorkspaceRow; session: S }> {
    const passwordHash = input.password ? await hashPassword(input.password) : null;
    return this.sql.tx(async (tx) => {
      if (input.email) {
        const taken = await this.sql.one<{ id: string }>('SELECT id FROM people WHERE lower(email) = lower($1)', [input.email], tx);
        if (taken) throw emailTaken();
      }
      const workspace = await this.workspaces.create({ name: input.workspaceName ?? `${input.displayName}'s workspace`, plan: 'free', origin: 'person_signup' }, tx);
      await this.workspaces.createTestWorkspace(workspace, tx);
      const person = await this.sql.one<PersonRow>(
        `INSERT INTO people (id, email, password_hash, display_name, date_of_birth, default_workspace_id, signed_up_from_hash) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *`,
        [newId('per'), input.email ?? null, passwordHash, input.displayName, input.dateOfBirth, workspace.id, signedUpFromHash],
        tx,
      );
      if (!person) throw new Error('person insert returned nothing');
      await this.workspaces.addMember(workspace.id, person.id, 'owner', tx);
      if (input.wallet) await this.sql.exec('INSERT INTO wallet_links (address, person_id) VALUES ($1, $2)', [input.wallet.toLowerCase(), person.id], tx);
      const session = await signIn(person, tx);
      return { person, workspace: (await this.workspaces.get(workspace.id, tx)) as WorkspaceRow, session };
    }).catch((err: unknown) => {
      // A sign-up of the same email in parallel passed the check above too; the index decides.
      throw isUniqueViolation(err, 'people_email_idx') ? emailTaken() : err;
    });
  }

  /** Checks email and password in constant time whether or not the account exists. */
  async checkPassword(email: string, password: string): Promise<PersonRow | null> {
    const person = await this.sql.one<PersonRow>('SELECT * FROM people WHERE lower(email) = lower($1)', [email]);
    const ok = await verifyPassword(password, person?.password_hash ?? DUMMY_HASH);
    return person && person.password_hash && ok ? person : null;
  }

  async get(id: string): Promise<PersonRow | null> {
    return this.sql.one<PersonRow>('SELECT * FROM people WHERE id = $1', [id]);
  }

  async byWallet(address: string): Promise<PersonRow | null> {
    return this.sql.one<PersonRow>('SELECT p.* FROM people p JOIN wallet_links w ON w.person_id = p.id WHERE w.address = $1', [address.toLowerCase()]);
  }

  /** Links a wallet to a person; 409 when it is another's, also when two people link it at once (the insert decides). */
  async linkWallet(personId: string, address: string): Promise<void> {
    const key = address.toLowerCase();
    const inserted = await this.sql.one('INSERT INTO wallet_links (address, person_id) VALUES ($1, $2) ON CONFLICT (address) DO NOTHING RETURNING address', [key, personId]);
    if (inserted) return;
    const owner = await this.sql.one<{ person_id: string }>('SELECT person_id FROM wallet_links WHERE address = $1', [key]);
    if (owner && owner.person_id !== personId) {
      throw new ApiError('conflict', 'This wallet is linked to another account.', { hint: 'A wallet signs in to one account: sign in with it (POST /api/auth/wallet/nonce, then /api/auth/wallet/signin) to use that account, or link another wallet here.' });
    }
  }

  async wallets(personId: string): Promise<Array<{ address: string; created_at: Date }>> {
    return this.sql.many('SELECT address, created_at FROM wallet_links WHERE person_id = $1 ORDER BY created_at', [personId]);
  }

  /** The workspaces a person may act in: their memberships, each followed by its test workspace (same role). */
  async memberships(personId: string): Promise<MembershipView[]> {
    return this.sql.many<MembershipView>(
      `SELECT w.id AS workspace_id, w.name, m.role, w.plan, w.is_test
         FROM memberships m JOIN workspaces w ON w.id = m.workspace_id OR (w.is_test AND w.parent_id = m.workspace_id)
        WHERE m.person_id = $1 ORDER BY m.created_at, w.is_test, w.id`,
      [personId],
    );
  }
}

export function personView(p: PersonRow): Record<string, unknown> {
  return {
    id: p.id,
    email: p.email,
    email_verified: p.email_verified,
    display_name: p.display_name,
    status: p.status,
    default_workspace_id: p.default_workspace_id,
    created_at: new Date(p.created_at).toISOString(),
  };
}
