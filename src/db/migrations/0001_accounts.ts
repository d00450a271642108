import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE users (
      id text PRIMARY KEY,
      email text NOT NULL UNIQUE,
      name text NOT NULL,
      password_hash text NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    `CREATE TABLE sessions (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      token_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`,
    `CREATE TABLE companies (
      id text PRIMARY KEY,
      name text NOT NULL,
      live boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    `CREATE TABLE customer_accounts (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
      name text NOT NULL,
      created_at timestamptz NOT NULL
    )`,
    'CREATE INDEX customer_accounts_tenant ON customer_accounts (tenant_id, created_at DESC, id DESC)',
    `CREATE TABLE memberships (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      role text NOT NULL,
      customer_account_id text REFERENCES customer_accounts(id) ON DELETE CASCADE,
      created_at timestamptz NOT NULL,
      UNIQUE (tenant_id, user_id)
    )`,
    'CREATE INDEX memberships_user ON memberships (user_id)',
    `CREATE TABLE api_tokens (
      id text PRIMARY KEY,
      tenant_id text NOT NULL REFERENCES companies(id) ON DELETE CASCADE,
      name text NOT NULL,
      token_hash text NOT NULL UNIQUE,
      token_hint text NOT NULL,
      mode text NOT NULL,
      scopes jsonb NOT NULL,
      customer_account_id text REFERENCES customer_accounts(id) ON DELETE CASCADE,
      created_by text REFERENCES users(id) ON DELETE SET NULL,
      created_at timestamptz NOT NULL,
      last_used_at timestamptz,
      revoked_at timestamptz
    )`,
    'CREATE INDEX api_tokens_tenant ON api_tokens (tenant_id, created_at DESC, id DESC)',
    `CREATE TABLE idempotency_keys (
      scope text NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      response_status integer,
      response_body text,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (scope, key)
    )`,
    'CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)',
    `CREATE TABLE audit_events (
      id text PRIMARY KEY,
      tenant_id text,
      actor text NOT NULL,
      action text NOT NULL,
      details jsonb NOT NULL,
      created_at timestamptz NOT NULL
    )`,
    'CREATE INDEX audit_events_tenant ON audit_events (tenant_id, created_at DESC)',
    `CREATE TABLE mail_outbox (
      id text PRIMARY KEY,
      recipients jsonb NOT NULL,
      subject text NOT NULL,
      body text NOT NULL,
      created_at timestamptz NOT NULL,
      sent_at timestamptz,
      error text
    )`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TABLE mail_outbox',
    'DROP TABLE audit_events',
    'DROP TABLE idempotency_keys',
    'DROP TABLE api_tokens',
    'DROP TABLE memberships',
    'DROP TABLE customer_accounts',
    'DROP TABLE companies',
    'DROP TABLE sessions',
    'DROP TABLE users',
  ]);
}
