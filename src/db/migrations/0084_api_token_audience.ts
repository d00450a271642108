import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 50 item 4 (CONTRACT.md, Trust 3): an API token is for the API (`v1`, every token so far)
 * or for the MCP server (`mcp`): a headless agent's token, made in the dashboard, that works only
 * at `/mcp`, as an OAuth grant for `/mcp` does.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `ALTER TABLE api_tokens ADD COLUMN audience text NOT NULL DEFAULT 'v1'`,
    `ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_audience CHECK (audience IN ('v1', 'mcp'))`,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [`ALTER TABLE api_tokens DROP COLUMN audience`]);
}
