import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * When an installation was last approved. `user_id` already names who approved (app tokens act
 * as them); with `approved_at` the installation records who and when. Tokens and codes issued
 * before the latest approval are ended by the approval itself (apps/registry.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE installations ADD COLUMN approved_at timestamptz',
    'UPDATE installations SET approved_at = updated_at',
    'ALTER TABLE installations ALTER COLUMN approved_at SET NOT NULL',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE installations DROP COLUMN approved_at']);
}
