import type { Invitations } from '../services/invitations';
import type { Members } from '../services/members';

export interface TeamDeps {
  invitations: Invitations;
  members: Members;
  publicUrl: () => string;
  now: () => number;
}
