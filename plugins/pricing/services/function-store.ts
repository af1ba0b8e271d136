import type { Transaction } from 'sequelize';
import { isUniqueViolation } from '../../../core/db/sql';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { formatMoney, formatMultiplier } from '../../../core/money';
import type { FunctionDescriptor, FunctionSource, FunctionStatus } from '../../../engine';
import { assertWorkspaceRoom } from '../../identity';
import type { TakeClaim } from '../../identity';
import { impersonatedBy } from './reserved-names';

interface FunctionRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  tags: string[];
  execution_type: 'external_api' | 'pipeline';
  status: FunctionStatus;
  is_public: boolean;
  cost_per_unit: string;
  cost_multiplier: string;
  endpoint_url: string | null;
  timeout_ms: number | null;
  commission_pct: string | null;
  listed_at: Date | null;
  signing_generation: number;
  created_at: Date;
  updated_at: Date;
}

export interface FunctionRecord extends FunctionDescriptor {
  commissionPct: string | null;
  createdAt: string;
  updatedAt: string;
}

function toRecord(r: FunctionRow): FunctionRecord {
  return {
    id: r.id,
    name: r.name,
    workspaceId: r.workspace_id,
    builtIn: false,
    executionType: r.execution_type,
    status: r.status,
    isPublic: r.is_public,
    costPerUnit: formatMoney(r.cost_per_unit, 8, 2),
    costMultiplier: formatMultiplier(r.cost_multiplier),
    description: r.description,
    tags: r.tags,
    endpointUrl: r.endpoint_url,
    timeoutMs: r.timeout_ms,
    commissionPct: r.commission_pct === null ? null : formatMoney(r.commission_pct, 2, 0),
    signingGeneration: r.signing_generation,
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}

export interface NewFunction {
  workspaceId: string;
  name: string;
  description: string;
  tags: string[];
  executionType: 'external_api' | 'pipeline';
  isPublic: boolean;
  costPerUnit: string;
  costMultiplier: string;
  endpointUrl: string | null;
  timeoutMs: number | null;
}

export interface FunctionPatch {
  status?: FunctionStatus | undefined;
  description?: string | undefined;
  tags?: string[] | undefined;
  isPublic?: boolean | undefined;
  costPerUnit?: string | undefined;
  costMultiplier?: string | undefined;
  endpointUrl?: string | undefined;
  /** null: back to the service default (ENGINE_FUNCTION_TIMEOUT_MS). */
  timeoutMs?: number | null | undefined;
}

/** Workspace functions in PostgreSQL; the engine's registry loads them through `FunctionSource`. */
export class FunctionStore implements FunctionSource {
  /** `perWorkspace`: FUNCTIONS_PER_WORKSPACE. */
  constructor(
    private readonly sql: Sql,
    private readonly perWorkspace: number,
  ) {}

  async loadAll(): Promise<FunctionDescriptor[]> {
    return (await this.sql.many<FunctionRow>('SELECT * FROM pricing_functions')).map(toRecord);
  }

  async loadOne(id: string): Promise<FunctionDescriptor | null> {
    const row = await this.sql.one<FunctionRow>('SELECT * FROM pricing_functions WHERE id = $1', [id]);
    return row ? toRecord(row) : null;
  }

  async get(id: string): Promise<FunctionRecord | null> {
    const row = await this.sql.one<FunctionRow>('SELECT * FROM pricing_functions WHERE id = $1', [id]);
    return row ? toRecord(row) : null;
  }

  /** `take`: an Idempotency-Key claim, taken first in the same transaction (IdempotencyKeys). */
  async create(f: NewFunction, take?: TakeClaim): Promise<FunctionRecord> {
    const passesFor = impersonatedBy(f.name);
    if (passesFor) throw nameReserved(f.name, passesFor);
    const id = newId('fn');
    // A draft is listed nowhere, public or not: no commission rate nor listing time until it is public and active (update).
    const insert = (tx?: Transaction) =>
      this.sql.one<FunctionRow>(
        `INSERT INTO pricing_functions (id, workspace_id, name, description, tags, execution_type, is_public, cost_per_unit, cost_multiplier, endpoint_url, timeout_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
        [
          id,
          f.workspaceId,
          f.name,
          f.description,
          f.tags,
          f.executionType,
          f.isPublic,
          f.costPerUnit,
          f.costMultiplier,
          f.endpointUrl,
          f.timeoutMs,
        ],
        tx,
      );
    try {
      const row = await this.sql.tx(async (tx) => {
        await take?.(tx, id);
        // Every function stays (none is deleted) and every instance holds every one in memory.
        await assertWorkspaceRoom(this.sql, tx, f.workspaceId, {
          setting: 'FUNCTIONS_PER_WORKSPACE',
          value: this.perWorkspace,
          what: 'pricing functions',
          count: 'SELECT count(*)::int AS n FROM pricing_functions WHERE workspace_id = $1',
          hint: 'Functions cannot be deleted: change one you have instead (PATCH /api/functions/{id} takes a new endpoint_url, description, tags and price), or ask the operator to raise FUNCTIONS_PER_WORKSPACE.',
        });
        return insert(tx);
      });
      return toRecord(row as FunctionRow);
    } catch (err) {
      if (isUniqueViolation(err, 'pricing_functions_name_idx')) throw nameTaken(f.name);
      throw err;
    }
  }

  /**
   * A name like `name` that nobody holds now: `name-2`, `name-3`, … (shortened to fit 64 characters). Offered with a
   * 409, so an agent that sent an example's name back literally gets a name that works on the next try. Null for a
   * reserved name: every variant of it is reserved too, and none is ever proposed.
   */
  async freeVariant(name: string): Promise<string | null> {
    const base = name.toLowerCase().slice(0, 64 - 4);
    if (impersonatedBy(base)) return null;
    const rows = await this.sql.many<{ n: string }>('SELECT lower(name) AS n FROM pricing_functions WHERE left(lower(name), $2) = $1', [`${base}-`, base.length + 1]);
    const held = new Set(rows.map((r) => r.n));
    let i = 2;
    // base-N passes for nothing base does not: no reserved name ends in a digit.
    while (held.has(`${base}-${i}`)) i++;
    return `${base}-${i}`;
  }

  /**
   * Applies a patch of the owner. A function is listed while public and active, so the patch that first makes it both
   * (whichever of the two came last) fixes its commission rate for good; a public draft or inactive one has none yet.
   * The patch is read over the row as the last committed PATCH left it, so two racing to make it so fix the rate once.
   */
  async update(id: string, workspaceId: string, patch: FunctionPatch, commissionPct: number): Promise<FunctionRecord | null> {
    const row = await this.sql.one<FunctionRow>(
      `UPDATE pricing_functions SET
         status = COALESCE($3, status),
         description = COALESCE($4, description),
         tags = COALESCE($5, tags),
         is_public = COALESCE($6, is_public),
         cost_per_unit = COALESCE($7, cost_per_unit),
         cost_multiplier = COALESCE($8, cost_multiplier),
         endpoint_url = COALESCE($9, endpoint_url),
         timeout_ms = CASE WHEN $12 THEN NULL ELSE COALESCE($10, timeout_ms) END,
         commission_pct = CASE WHEN COALESCE($6, is_public) AND COALESCE($3, status) = 'active' AND commission_pct IS NULL THEN $11 ELSE commission_pct END,
         listed_at = CASE WHEN COALESCE($6, is_public) AND COALESCE($3, status) = 'active' AND listed_at IS NULL THEN now() ELSE listed_at END,
         updated_at = now()
       WHERE id = $1 AND workspace_id = $2 RETURNING *`,
      [
        id,
        workspaceId,
        patch.status ?? null,
        patch.description ?? null,
        patch.tags ?? null,
        patch.isPublic ?? null,
        patch.costPerUnit ?? null,
        patch.costMultiplier ?? null,
        patch.endpointUrl ?? null,
        patch.timeoutMs ?? null,
        commissionPct,
        patch.timeoutMs === null,
      ],
    );
    return row ? toRecord(row) : null;
  }

  /** Moves an external function of the workspace to its next signing secret (the previous one ends now). */
  async rotateSigning(id: string, workspaceId: string): Promise<FunctionRecord | null> {
    const row = await this.sql.one<FunctionRow>(
      `UPDATE pricing_functions SET signing_generation = signing_generation + 1, updated_at = now()
       WHERE id = $1 AND workspace_id = $2 AND execution_type = 'external_api' RETURNING *`,
      [id, workspaceId],
    );
    return row ? toRecord(row) : null;
  }
}

/** The same 409 as a name someone holds: a reserved name is held by the service. */
function nameReserved(name: string, passesFor: string): ApiError {
  return new ApiError('conflict', `The function name "${name}" is reserved: it passes for ${passesFor}.`, {
    hint: 'A name that is, or begins with, a built-in\'s name ("-", "_" and "." aside), and the names built-in, builtin and official, are reserved, and so is every variant of them. Choose a name of your own, for example prefixed with your company or product.',
  });
}

function nameTaken(name: string): ApiError {
  return new ApiError('conflict', `The function name "${name}" is taken; names are unique across the network.`, { hint: 'Choose another name, for example prefixed with your company or product.' });
}
