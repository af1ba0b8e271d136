import type { Config } from '../../../config';
import type { Sql } from '../../../core/db/sql';
import type { RouteSpec } from '../../../core/http/route';
import type { AuditLog } from '../services/audit';
import type { KeyService } from '../services/key-service';
import type { OAuthService } from '../services/oauth';
import type { Onboarding } from '../services/onboarding';
import type { SpentRegistrations } from '../services/spent-registrations';
import type { Workspaces } from '../services/workspaces';

export interface IdentityDeps {
  config: Config;
  sql: Sql;
  keys: KeyService;
  workspaces: Workspaces;
  onboarding: Onboarding;
  oauth: OAuthService;
  audit: AuditLog;
  spentRegistrations: SpentRegistrations;
  publicUrl: () => string;
  /** Every route the service declares, read when asked (plugins after this one add theirs later). */
  routes: () => readonly RouteSpec[];
}
