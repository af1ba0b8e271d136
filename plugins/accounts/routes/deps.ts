import type { Config } from '../../../config';
import type { Sql } from '../../../core/db/sql';
import type { AuditLog, FailedAuthGuard, IdempotencyKeys, KeyService, Workspaces } from '../../identity';
import type { People } from '../services/people';
import type { Sessions } from '../services/sessions';
import type { WalletSignIn } from '../services/wallet-signin';

export interface AccountsDeps {
  config: Config;
  sql: Sql;
  people: People;
  sessions: Sessions;
  wallets: WalletSignIn;
  keys: KeyService;
  workspaces: Workspaces;
  audit: AuditLog;
  failures: FailedAuthGuard;
  idempotency: IdempotencyKeys;
  /** The service's own origin (PUBLIC_URL, else the address it listens on): the only page that may sign people in. */
  ownOrigin: () => string;
}
