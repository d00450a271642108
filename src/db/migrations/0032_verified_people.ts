import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Verified people (issue 22 item 2; decision 0023).
 * - `users.email_verified_at`: when the person proved the address by opening a link sent to it.
 *   People who signed up before are not verified: reviewer powers and invitations wait for it.
 * - `email_verifications`: the links sent, single use and 24 hours, kept as a hash of the token.
 * - `sign_in_delays` replaces the fixed-window `sign_in_failures`: a growing delay per account, and
 *   per source that signed in to the account before (`sign_in_trust`), so that failures from
 *   elsewhere never hold back a browser or address the person used successfully.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE users ADD COLUMN email_verified_at timestamptz',
    `CREATE TABLE email_verifications (
      id text PRIMARY KEY,
      user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      email text NOT NULL,
      token_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`,
    'CREATE INDEX email_verifications_user ON email_verifications (user_id, created_at)',
    'DROP TABLE sign_in_failures',
    `CREATE TABLE sign_in_delays (
      throttle_key text PRIMARY KEY,
      failures integer NOT NULL,
      last_failure_at timestamptz NOT NULL,
      next_attempt_at timestamptz NOT NULL
    )`,
    'CREATE INDEX sign_in_delays_last_failure ON sign_in_delays (last_failure_at)',
    `CREATE TABLE sign_in_trust (
      account_key text NOT NULL,
      source_key text NOT NULL,
      last_success_at timestamptz NOT NULL,
      PRIMARY KEY (account_key, source_key)
    )`,
    'CREATE INDEX sign_in_trust_last_success ON sign_in_trust (last_success_at)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP TABLE sign_in_trust',
    'DROP TABLE sign_in_delays',
    `CREATE TABLE sign_in_failures (
      account_key text PRIMARY KEY,
      window_started_at timestamptz NOT NULL,
      failures integer NOT NULL
    )`,
    'CREATE INDEX sign_in_failures_window ON sign_in_failures (window_started_at)',
    'DROP TABLE email_verifications',
    'ALTER TABLE users DROP COLUMN email_verified_at',
  ]);
}
