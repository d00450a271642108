import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Accounts hardening (ISSUE-7 item 8): failed sign-ins per account, shared by every process
 * (accounts/sign-in-throttle.ts); and the mark of the reviewer the demo seeded, who is a reviewer
 * only while the demo is on (accounts/users.ts isReviewer), never someone who signs up later with
 * the demo reviewer's e-mail.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE sign_in_failures (
      account_key text PRIMARY KEY,
      window_started_at timestamptz NOT NULL,
      failures integer NOT NULL
    )`,
    'CREATE INDEX sign_in_failures_window ON sign_in_failures (window_started_at)',
    'ALTER TABLE users ADD COLUMN demo_reviewer boolean NOT NULL DEFAULT false',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['ALTER TABLE users DROP COLUMN demo_reviewer', 'DROP TABLE sign_in_failures']);
}
