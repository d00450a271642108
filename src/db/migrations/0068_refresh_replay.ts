import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * The agents' refresh grace answers with the pair the first use minted (issue 39 item 6, decision
 * 0064). Tokens are stored hashed, so the pair is kept sealed (the secret key box) beside the spent
 * refresh token of an agent client, for the 30 s of the grace only: housekeeping drops it after.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE oauth_tokens ADD COLUMN reissue_sealed text',
    'CREATE INDEX oauth_tokens_reissue ON oauth_tokens (used_at) WHERE reissue_sealed IS NOT NULL',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP INDEX oauth_tokens_reissue',
    'ALTER TABLE oauth_tokens DROP COLUMN reissue_sealed',
  ]);
}
