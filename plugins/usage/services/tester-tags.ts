import type { Sql } from '../../../core/db/sql';
import { ApiError } from '../../../core/errors';
import type { ErrorIssue } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isIpAddress } from '../schemas';
import type { TesterTagsBody } from '../schemas';
import { addressHashes, maskAddress } from '../../../core/address';

interface TagRow {
  id: string;
  label: string;
  user_agent_contains: string | null;
  address_hashes: string[] | null;
  address_masked: string | null;
}

export interface TesterTagView {
  id: string;
  label: string;
  user_agent_contains: string | null;
  /** Masked (e.g. `203.0.*.*`); the address itself is never kept. */
  address: string | null;
}

const view = (r: TagRow): TesterTagView => ({ id: r.id, label: r.label, user_agent_contains: r.user_agent_contains, address: r.address_masked });

/**
 * A workspace's private tester tags (Settings). They grant nothing: they only make matching
 * keyless callers appear as Testers in that workspace's own usage views.
 */
export class TesterTags {
  constructor(private readonly sql: Sql) {}

  async list(workspaceId: string): Promise<TesterTagView[]> {
    const rows = await this.sql.many<TagRow>('SELECT id, label, user_agent_contains, address_hashes, address_masked FROM usage_tester_tags WHERE workspace_id = $1 ORDER BY position', [workspaceId]);
    return rows.map(view);
  }

  /**
   * Replaces the whole set. An address is sent as an IP; a tag sent back with its id and the
   * masked address GET showed keeps its stored address, so what GET returns can be PUT unchanged.
   */
  async replace(workspaceId: string, body: TesterTagsBody): Promise<TesterTagView[]> {
    return this.sql.tx(async (t) => {
      const existing = await this.sql.many<TagRow>('SELECT id, label, user_agent_contains, address_hashes, address_masked FROM usage_tester_tags WHERE workspace_id = $1 FOR UPDATE', [workspaceId], t);
      const byId = new Map(existing.map((r) => [r.id, r]));
      const issues: ErrorIssue[] = [];
      const rows = body.tags.map((tag, i): TagRow => {
        const kept = tag.id ? byId.get(tag.id) : undefined;
        if (tag.id && !kept) issues.push({ path: `tags.${i}.id`, reason: 'not a tag of this workspace; leave id out to add a new tag' });
        let hashes: string[] | null = null;
        let masked: string | null = null;
        if (tag.address) {
          if (isIpAddress(tag.address)) {
            hashes = addressHashes(tag.address);
            masked = maskAddress(tag.address);
          } else if (kept && kept.address_masked === tag.address) {
            hashes = kept.address_hashes;
            masked = kept.address_masked;
          } else {
            issues.push({ path: `tags.${i}.address`, reason: 'must be an IPv4 or IPv6 address (or, with the tag\'s id, the masked address GET returned, to keep it)' });
          }
        }
        return { id: kept?.id ?? newId('ttag'), label: tag.label, user_agent_contains: tag.user_agent_contains ?? null, address_hashes: hashes, address_masked: masked };
      });
      const seen = new Set<string>();
      rows.forEach((r, i) => {
        if (seen.has(r.id)) issues.push({ path: `tags.${i}.id`, reason: 'the same tag id appears twice' });
        seen.add(r.id);
      });
      if (issues.length > 0) {
        throw new ApiError('validation_error', `Request body failed validation (${issues[0]?.path}: ${issues[0]?.reason}).`, {
          issues,
          hint: 'Each tag needs a label and user_agent_contains and/or an IP address.',
        });
      }
      await this.sql.exec('DELETE FROM usage_tester_tags WHERE workspace_id = $1', [workspaceId], t);
      for (const [position, r] of rows.entries()) {
        await this.sql.exec(
          'INSERT INTO usage_tester_tags (id, workspace_id, position, label, user_agent_contains, address_hashes, address_masked) VALUES ($1, $2, $3, $4, $5, $6, $7)',
          [r.id, workspaceId, position, r.label, r.user_agent_contains, r.address_hashes, r.address_masked],
          t,
        );
      }
      return rows.map(view);
    });
  }
}
