import type { Migration } from '../../../core/db/migrations';

export const identitySchema: Migration = {
  name: '0001-identity-schema',
  async up({ sequelize }) {
    await sequelize.query(`
      CREATE TABLE service_secrets (
        name text PRIMARY KEY,
        value text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE workspaces (
        id text PRIMARY KEY,
        name text NOT NULL,
        plan text NOT NULL,
        origin text NOT NULL,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'rejected', 'restricted')),
        is_sandbox boolean NOT NULL DEFAULT false,
        is_test boolean NOT NULL DEFAULT false,
        created_by_agent boolean NOT NULL DEFAULT false,
        former_sandbox boolean NOT NULL DEFAULT false,
        parent_id text REFERENCES workspaces(id),
        test_workspace_id text REFERENCES workspaces(id),
        claimed_at timestamptz,
        settings jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX workspaces_parent_idx ON workspaces (parent_id) WHERE parent_id IS NOT NULL;

      CREATE TABLE people (
        id text PRIMARY KEY,
        email text,
        email_verified boolean NOT NULL DEFAULT false,
        password_hash text,
        display_name text NOT NULL,
        date_of_birth date,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'rejected', 'restricted')),
        default_workspace_id text REFERENCES workspaces(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE UNIQUE INDEX people_email_idx ON people (lower(email)) WHERE email IS NOT NULL;

      CREATE TABLE wallet_links (
        address text PRIMARY KEY,
        person_id text NOT NULL REFERENCES people(id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE memberships (
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        person_id text NOT NULL REFERENCES people(id) ON DELETE CASCADE,
        role text NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (workspace_id, person_id)
      );
      CREATE INDEX memberships_person_idx ON memberships (person_id);

      CREATE TABLE agents (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        name text NOT NULL,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
        created_by_person_id text REFERENCES people(id),
        user_agent text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX agents_workspace_idx ON agents (workspace_id);

      CREATE TABLE api_keys (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        key_hash text NOT NULL UNIQUE,
        display_prefix text NOT NULL,
        last4 text NOT NULL,
        name text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('sandbox', 'agent', 'person', 'oauth_client')),
        scopes text[],
        legacy boolean NOT NULL DEFAULT false,
        created_by_person_id text REFERENCES people(id),
        agent_id text REFERENCES agents(id),
        expires_at timestamptz,
        revoked_at timestamptz,
        revoked_reason text,
        last_used_at timestamptz,
        rotated_from_id text REFERENCES api_keys(id),
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, created_at DESC);

      CREATE TABLE oauth_clients (
        client_id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        agent_id text NOT NULL REFERENCES agents(id),
        key_id text NOT NULL REFERENCES api_keys(id),
        client_name text NOT NULL,
        metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
      );

      CREATE TABLE claim_tokens (
        token_hash text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        expires_at timestamptz NOT NULL,
        used_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX claim_tokens_workspace_idx ON claim_tokens (workspace_id);

      CREATE TABLE invitations (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        email text NOT NULL,
        role text NOT NULL CHECK (role IN ('admin', 'member')),
        token_hash text NOT NULL UNIQUE,
        invited_by_person_id text REFERENCES people(id),
        via_key_id text REFERENCES api_keys(id),
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'accepted', 'revoked', 'cancelled', 'expired')),
        expires_at timestamptz NOT NULL,
        accepted_by_person_id text REFERENCES people(id),
        accepted_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX invitations_workspace_idx ON invitations (workspace_id, created_at DESC);
      CREATE INDEX invitations_key_idx ON invitations (via_key_id) WHERE via_key_id IS NOT NULL;

      CREATE TABLE person_sessions (
        id uuid PRIMARY KEY,
        person_id text NOT NULL REFERENCES people(id) ON DELETE CASCADE,
        token_hash text NOT NULL UNIQUE,
        method text NOT NULL,
        user_agent text,
        ip text,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_seen_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        revoked_at timestamptz
      );
      CREATE INDEX person_sessions_person_idx ON person_sessions (person_id);

      CREATE TABLE audit_log (
        id text PRIMARY KEY,
        workspace_id text NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
        actor_type text NOT NULL,
        actor_id text NOT NULL,
        via_key_id text,
        action text NOT NULL,
        target text,
        outcome text NOT NULL CHECK (outcome IN ('done', 'refused')),
        reason text,
        details jsonb NOT NULL DEFAULT '{}'::jsonb,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX audit_log_workspace_idx ON audit_log (workspace_id, created_at DESC, id DESC);
    `);
  },
  async down({ sequelize }) {
    await sequelize.query(
      'DROP TABLE IF EXISTS audit_log, person_sessions, invitations, claim_tokens, oauth_clients, api_keys, agents, memberships, wallet_links, people, workspaces, service_secrets CASCADE',
    );
  },
};
