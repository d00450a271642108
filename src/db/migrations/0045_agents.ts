import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Agents (issue 31): every code and token is bound to one resource (RFC 8707): `v1` (the REST API,
 * what every grant before this had) or `mcp` (the MCP server). An installation has a mode: live
 * (every app's) or test (an agent connection approved for test data). A company's `agent_access`
 * says which modes agents may use. Agent clients (client metadata documents, dynamic registration)
 * are apps without a developer, with a row in `agent_clients` (where they came from, their
 * metadata); housekeeping removes registrations never approved.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE oauth_codes ADD COLUMN resource text NOT NULL DEFAULT 'v1' CHECK (resource IN ('v1', 'mcp'))`,
    `ALTER TABLE oauth_tokens ADD COLUMN resource text NOT NULL DEFAULT 'v1' CHECK (resource IN ('v1', 'mcp'))`,
    'ALTER TABLE installations ADD COLUMN livemode boolean NOT NULL DEFAULT true',
    'ALTER TABLE installations ADD COLUMN last_used_at timestamptz',
    `ALTER TABLE companies ADD COLUMN agent_access jsonb NOT NULL DEFAULT '{"test": true, "live": false}'`,
    'ALTER TABLE apps ALTER COLUMN developer_id DROP NOT NULL',
    `CREATE TABLE agent_clients (
      app_id text PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
      source text NOT NULL CHECK (source IN ('metadata_document', 'registration')),
      metadata jsonb NOT NULL,
      metadata_expires_at timestamptz,
      registered_from text,
      first_approved_at timestamptz,
      created_at timestamptz NOT NULL
    )`,
    `CREATE INDEX agent_clients_unused ON agent_clients (created_at) WHERE source = 'registration' AND first_approved_at IS NULL`,
    'CREATE INDEX agent_clients_registered_from ON agent_clients (registered_from, created_at) WHERE registered_from IS NOT NULL',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TABLE agent_clients',
    'ALTER TABLE apps ALTER COLUMN developer_id SET NOT NULL',
    'ALTER TABLE companies DROP COLUMN agent_access',
    'ALTER TABLE installations DROP COLUMN last_used_at',
    'ALTER TABLE installations DROP COLUMN livemode',
    'ALTER TABLE oauth_tokens DROP COLUMN resource',
    'ALTER TABLE oauth_codes DROP COLUMN resource',
  ]);
}
