import type { Migration } from '../../../core/db/migrations';

export const changelogSchema: Migration = {
  name: '0001-changelog',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE changelog_entries (
        id text PRIMARY KEY,
        published_at timestamptz NOT NULL,
        title text NOT NULL,
        summary text NOT NULL,
        link text NOT NULL,
        audience text[] NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX changelog_entries_published_idx ON changelog_entries (published_at DESC);

      -- One row per (key, entry) shown: "each entry is shown to a key once", across instances.
      CREATE TABLE notice_deliveries (
        key_id text NOT NULL,
        entry_id text NOT NULL REFERENCES changelog_entries(id) ON DELETE CASCADE,
        shown_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (key_id, entry_id)
      );
    `);
  },
  async down({ sequelize }) {
    await sequelize.query('DROP TABLE IF EXISTS notice_deliveries, changelog_entries');
  },
};
