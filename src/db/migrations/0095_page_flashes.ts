import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 53, decision 0083: the dashboard's one-time messages, kept server-side. A form answers
 * 303 to the page that shows its result; what that page must say once (a message, or a secret
 * shown once, sealed) waits here under a random id that only a cookie of the browser carries,
 * and the first read deletes it. Never company data to shard: a reference table on Citus.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE page_flashes (
      id text PRIMARY KEY,
      kind text NOT NULL,
      message text NOT NULL,
      secret_sealed text,
      secret_note text,
      expires_at timestamptz NOT NULL
    )`,
    'CREATE INDEX page_flashes_expires_at ON page_flashes (expires_at)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP TABLE page_flashes']);
}
