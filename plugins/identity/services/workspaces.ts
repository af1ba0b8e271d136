import type { Transaction } from 'sequelize';
import type { Sql } from '../../../core/db/sql';
import { newId } from '../../../core/ids';
import type { Plan, Role, WorkspaceOrigin, WorkspaceRow } from '../domain';

export interface NewWorkspace {
  name: string;
  plan: Plan;
  origin: WorkspaceOrigin;
  isSandbox?: boolean;
  isTest?: boolean;
  createdByAgent?: boolean;
  parentId?: string | null;
}

/**
 * SQL for the workspace whose memberships decide who acts in workspace `w`: a test workspace belongs
 * to its parent's team (members act in it with their role there), any other workspace to its own.
 */
export const MEMBERSHIP_WORKSPACE = 'CASE WHEN w.is_test THEN w.parent_id ELSE w.id END';

/** Workspace and membership records. */
export class Workspaces {
  constructor(private readonly sql: Sql) {}

  async create(w: NewWorkspace, tx?: Transaction): Promise<WorkspaceRow> {
    const row = await this.sql.one<WorkspaceRow>(
      `INSERT INTO workspaces (id, name, plan, origin, is_sandbox, is_test, created_by_agent, parent_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING *`,
      [newId('ws'), w.name, w.plan, w.origin, w.isSandbox ?? false, w.isTest ?? false, w.createdByAgent ?? false, w.parentId ?? null],
      tx,
    );
    if (!row) throw new Error('workspace insert returned nothing');
    return row;
  }

  /** An ordinary workspace gets its own test workspace. */
  async createTestWorkspace(parent: WorkspaceRow, tx?: Transaction): Promise<WorkspaceRow> {
    const test = await this.create({ name: `${parent.name} (test)`, plan: parent.plan === 'agent_starter' ? 'free' : parent.plan, origin: 'test_workspace', isTest: true, parentId: parent.id }, tx);
    await this.sql.exec('UPDATE workspaces SET test_workspace_id = $2, updated_at = now() WHERE id = $1', [parent.id, test.id], tx);
    return test;
  }

  async get(id: string, tx?: Transaction, lock = false): Promise<WorkspaceRow | null> {
    return this.sql.one<WorkspaceRow>(`SELECT * FROM workspaces WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id], tx);
  }

  /** The person's role in the workspace; in a test workspace, their role in its parent (whose team it shares). */
  async roleOf(workspaceId: string, personId: string, tx?: Transaction): Promise<Role | null> {
    const row = await this.sql.one<{ role: Role }>(
      `SELECT m.role FROM workspaces w JOIN memberships m ON m.workspace_id = ${MEMBERSHIP_WORKSPACE} WHERE w.id = $1 AND m.person_id = $2`,
      [workspaceId, personId],
      tx,
    );
    return row?.role ?? null;
  }

  async ownerOf(workspaceId: string, tx?: Transaction): Promise<string | null> {
    const row = await this.sql.one<{ person_id: string }>(`SELECT person_id FROM memberships WHERE workspace_id = $1 AND role = 'owner' ORDER BY created_at LIMIT 1`, [workspaceId], tx);
    return row?.person_id ?? null;
  }

  async addMember(workspaceId: string, personId: string, role: Role, tx?: Transaction): Promise<void> {
    await this.sql.exec(
      `INSERT INTO memberships (workspace_id, person_id, role) VALUES ($1, $2, $3)
       ON CONFLICT (workspace_id, person_id) DO UPDATE SET role = CASE WHEN memberships.role = 'owner' THEN 'owner' ELSE EXCLUDED.role END, updated_at = now()`,
      [workspaceId, personId, role],
      tx,
    );
  }

  /**
   * The claimed agents of the tree `workspaceId` belongs to: under its top workspace, at any depth. A claimed agent
   * workspace may hold claims itself, so counting a workspace's direct children alone let claims nested one level
   * deeper pass the limit without end. The top workspace is locked, so claims into one tree are counted one at a time.
   */
  async countClaimedAgentsInTree(workspaceId: string, tx: Transaction): Promise<number> {
    const top = await this.sql.one<{ id: string }>(
      `WITH RECURSIVE up AS (
         SELECT id, parent_id FROM workspaces WHERE id = $1
         UNION SELECT w.id, w.parent_id FROM workspaces w JOIN up ON w.id = up.parent_id
       ) SELECT id FROM up WHERE parent_id IS NULL`,
      [workspaceId],
      tx,
    );
    const root = top?.id ?? workspaceId;
    await this.sql.one('SELECT id FROM workspaces WHERE id = $1 FOR UPDATE', [root], tx);
    const row = await this.sql.one<{ n: string }>(
      `WITH RECURSIVE down AS (
         SELECT id FROM workspaces WHERE id = $1
         UNION SELECT w.id FROM workspaces w JOIN down ON w.parent_id = down.id
       ) SELECT count(*) AS n FROM workspaces WHERE id IN (SELECT id FROM down) AND former_sandbox`,
      [root],
      tx,
    );
    return Number(row?.n ?? 0);
  }
}

/** The public view of a workspace. */
export function workspaceView(w: WorkspaceRow): Record<string, unknown> {
  return {
    id: w.id,
    name: w.name,
    plan: w.plan,
    status: w.status,
    origin: w.origin,
    sandbox: w.is_sandbox,
    is_test: w.is_test,
    created_by_agent: w.created_by_agent,
    former_sandbox: w.former_sandbox,
    parent_id: w.parent_id,
    test_workspace_id: w.test_workspace_id,
    claimed_at: w.claimed_at ? new Date(w.claimed_at).toISOString() : null,
    created_at: new Date(w.created_at).toISOString(),
  };
}
