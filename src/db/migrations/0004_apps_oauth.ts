import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE apps (
      id text PRIMARY KEY,
      developer_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      name text NOT NULL,
      description text NOT NULL,
      homepage_url text,
      privacy_url text,
      support_url text,
      redirect_uris jsonb NOT NULL,
      scopes jsonb NOT NULL,
      kind text NOT NULL,
      client_secret_hash text,
      events_url text,
      events_secret_sealed text NOT NULL,
      events_previous_secret_sealed text,
      events_previous_secret_expires_at timestamptz,
      status text NOT NULL DEFAULT 'private',
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    'CREATE INDEX apps_developer ON apps (developer_id, created_at DESC, id DESC)',
    `CREATE TABLE installations (
      id text PRIMARY KEY,
      app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
      tenant_id text NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
      customer_account_id text REFERENCES customer_accounts(id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      scopes jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    // Approving the same app again for the same account updates the one installation.
    'CREATE UNIQUE INDEX installations_account ON installations (app_id, tenant_id, customer_account_id) NULLS NOT DISTINCT',
    'CREATE INDEX installations_tenant ON installations (tenant_id, created_at DESC, id DESC)',
    `CREATE TABLE oauth_codes (
      code_hash text PRIMARY KEY,
      app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
      installation_id text NOT NULL REFERENCES installations(id) ON DELETE CASCADE,
      user_id text NOT NULL,
      redirect_uri text NOT NULL,
      code_challenge text NOT NULL,
      scopes jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`,
    `CREATE TABLE oauth_tokens (
      id text PRIMARY KEY,
      token_hash text NOT NULL UNIQUE,
      kind text NOT NULL,
      app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
      installation_id text NOT NULL REFERENCES installations(id) ON DELETE CASCADE,
      user_id text NOT NULL,
      scopes jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      revoked_at timestamptz
    )`,
    'CREATE INDEX oauth_tokens_installation ON oauth_tokens (installation_id)',
    // Endpoints an installation made go away with it.
    `ALTER TABLE webhook_endpoints ADD CONSTRAINT webhook_endpoints_installation_fk
      FOREIGN KEY (installation_id) REFERENCES installations(id) ON DELETE CASCADE`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE webhook_endpoints DROP CONSTRAINT webhook_endpoints_installation_fk',
    'DROP TABLE oauth_tokens',
    'DROP TABLE oauth_codes',
    'DROP TABLE installations',
    'DROP TABLE apps',
  ]);
}
