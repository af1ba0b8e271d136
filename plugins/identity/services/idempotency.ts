import { createHash } from 'node:crypto';
import type { Request } from 'express';
import type { Transaction } from 'sequelize';
import type { Clock } from '../../../core/clock';
import { PeriodicTask } from '../../../core/periodic-task';
import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import type { Reply } from '../../../core/http/route';
import type { Logger } from '../../../core/logger';
import { stableStringify } from '../../../core/stable-json';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
/** Sent on an answer that repeats what the first request with the same key created. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';
const MAX_KEY_LENGTH = 255;
/** Printable ASCII: what a client puts in a header without encoding (a UUID, a ULID, a hash). */
const KEY_SHAPE = /^[\x21-\x7e]+$/;
const PRUNE_EVERY_MS = 3_600_000;

/** What is wrong with a refused key. Its length is not told in characters: Node reads header bytes one by one. */
function keyShapeOf(key: string): string {
  if (key.length === 0) return 'an empty value';
  if (/[^\x20-\x7e]/.test(key)) return 'a character outside printable ASCII';
  if (key.includes(' ')) return 'a space';
  return `${key.length} characters`;
}

/** The request's Idempotency-Key, or null when it sends none; 400 for a key of the wrong shape. */
export function idempotencyKeyOf(req: Request): string | null {
  const key = req.get(IDEMPOTENCY_HEADER);
  if (key === undefined) return null;
  const path = `headers.${IDEMPOTENCY_HEADER.toLowerCase()}`;
  // Node joins a header sent twice with ", ": said as such, not as a key that "got a space".
  if (key.includes(', ')) {
    const sent = req.rawHeaders.filter((h, i) => i % 2 === 0 && h.toLowerCase() === 'idempotency-key').length;
    if (sent > 1) {
      throw new ApiError('validation_error', `The ${IDEMPOTENCY_HEADER} header is sent ${sent} times; send it once.`, {
        issues: [{ path, reason: `sent ${sent} times (one key per request)` }],
        hint: 'Send one Idempotency-Key per request, such as a UUID, and the same one when retrying that request.',
      });
    }
  }
  return checkedIdempotencyKey(key, path, `The ${IDEMPOTENCY_HEADER} header`);
}

/** A key sent elsewhere than the header (an MCP tool call's `_meta.idempotency_key`), checked the same way; 400 naming `path`. */
export function checkedIdempotencyKey(key: unknown, path: string, what = path): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH || !KEY_SHAPE.test(key)) {
    throw new ApiError('validation_error', `${what} must be 1 to ${MAX_KEY_LENGTH} printable ASCII characters without spaces.`, {
      issues: [{ path, reason: `1 to ${MAX_KEY_LENGTH} printable ASCII characters without spaces (got ${typeof key === 'string' ? keyShapeOf(key) : typeof key})` }],
      hint: 'Send a fresh random value per intended request, such as a UUID, and the same value when retrying that request.',
    });
  }
  return key;
}

/** sha256 of a validated body, keys in any order: what tells a retry from another request under one key. */
export function requestFingerprint(body: unknown): string {
  return createHash('sha256').update(stableStringify(body)).digest('hex');
}

/**
 * A create request's claim on its Idempotency-Key, taken inside the transaction that creates the
 * resource: the key row commits with the resource or not at all, so a retry after an answer that
 * was lost (the network, or a COMMIT whose outcome the service could not learn) finds either both
 * or neither. A concurrent request with the same key waits on the first one's row and then replays.
 */
export interface IdempotencyClaim {
  workspaceId: string;
  /** The route the key is used on: one key on two routes is two requests. */
  scope: string;
  key: string;
  /** sha256 of the validated body, so the same key with another body is told apart. */
  fingerprint: string;
}

/** The key was already used in this workspace and route: by `resourceId`, with the same body or not. */
export class IdempotentReplay extends Error {
  constructor(
    readonly resourceId: string,
    readonly sameRequest: boolean,
  ) {
    super('idempotency key already used');
    this.name = 'IdempotentReplay';
  }
}

/** What a creating service calls first in its transaction, with the id it is about to create. */
export type TakeClaim = (tx: Transaction, resourceId: string) => Promise<void>;

/**
 * Idempotency keys of create routes (POST /api/api-keys, /api/functions, /api/routing-policies):
 * the first request with a key creates, a repeat within IDEMPOTENCY_KEY_TTL_H answers what it
 * created (201, `Idempotent-Replayed: true`) and creates nothing, the same key with another body is
 * 422 `idempotency_key_reused`. Only the resource id is kept, never the first answer's body: a new
 * API key's secret is shown once and stored only as its hash, so its replay cannot show it.
 */
export class IdempotencyKeys {
  /** Drops keys past the TTL, at most once an hour per instance, off the request's path. */
  private readonly prune: PeriodicTask;

  constructor(
    private readonly sql: Sql,
    clock: Clock,
    log: Logger,
    private readonly ttlHours: number,
  ) {
    this.prune = new PeriodicTask(
      clock,
      PRUNE_EVERY_MS,
      () => sql.exec('DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(hours => $1)', [ttlHours]),
      (err) => log.warn({ err }, 'pruning idempotency keys failed'),
    );
  }

  /** The request's claim, or null when it sends no Idempotency-Key; 400 for a key of the wrong shape. */
  claimOf(req: Request, scope: string, workspaceId: string, body: unknown): IdempotencyClaim | null {
    const key = idempotencyKeyOf(req);
    return key === null ? null : { workspaceId, scope, key, fingerprint: requestFingerprint(body) };
  }

  /**
   * Takes the claim for `resourceId` in the creating transaction, or throws IdempotentReplay (the
   * transaction then rolls back, creating nothing). A claim older than the TTL is taken over.
   */
  take(claim: IdempotencyClaim): TakeClaim {
    return async (tx, resourceId) => {
      const taken = await this.sql.one<{ resource_id: string }>(
        `INSERT INTO idempotency_keys (workspace_id, scope, key, fingerprint, resource_id) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (workspace_id, scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, resource_id = EXCLUDED.resource_id, created_at = now()
           WHERE idempotency_keys.created_at < now() - make_interval(hours => $6)
         RETURNING resource_id`,
        [claim.workspaceId, claim.scope, claim.key, claim.fingerprint, resourceId, this.ttlHours],
        tx,
      );
      if (taken) return;
      const first = await this.sql.one<{ resource_id: string; fingerprint: string }>('SELECT resource_id, fingerprint FROM idempotency_keys WHERE workspace_id = $1 AND scope = $2 AND key = $3', [claim.workspaceId, claim.scope, claim.key], tx);
      if (!first) throw new Error('idempotency key neither taken nor found');
      throw new IdempotentReplay(first.resource_id, first.fingerprint === claim.fingerprint);
    };
  }

  /**
   * Runs a create under `claim` (none: as is). A repeat is answered by `replay` from the resource the
   * first request created, marked with Idempotent-Replayed; null from it means that resource is gone.
   */
  async run(claim: IdempotencyClaim | null, create: (take: TakeClaim | undefined) => Promise<Reply>, replay: (resourceId: string) => Promise<Reply | null>): Promise<Reply> {
    if (!claim) return create(undefined);
    this.prune.poke();
    try {
      return await create(this.take(claim));
    } catch (err) {
      if (!(err instanceof IdempotentReplay)) throw err;
      if (!err.sameRequest) {
        throw new ApiError('idempotency_key_reused', `This ${IDEMPOTENCY_HEADER} was already used in this workspace for a different request to this route.`, {
          hint: `A key stands for one intended creation: retry that one with its own body, or send a new key (a fresh UUID) for this one. Keys are kept ${this.ttlHours} hours.`,
          fields: { resource_id: err.resourceId },
        });
      }
      const again = await replay(err.resourceId);
      if (!again) {
        throw new ApiError('conflict', `The request first sent with this ${IDEMPOTENCY_HEADER} created ${err.resourceId}, which no longer exists; nothing was created now.`, {
          hint: 'To create it again, send a new key (a fresh UUID).',
          fields: { resource_id: err.resourceId },
        });
      }
      return { ...again, headers: { ...again.headers, [REPLAYED_HEADER]: 'true' } };
    }
  }
}
