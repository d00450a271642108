import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE app_submissions (
      id text PRIMARY KEY,
      app_id text NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
      submitted_by text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
      status text NOT NULL,
      updates_published_app boolean NOT NULL,
      listing jsonb NOT NULL,
      note text,
      app_snapshot jsonb NOT NULL,
      events_url text,
      checks jsonb NOT NULL,
      reviewer_id text REFERENCES users(id) ON DELETE SET NULL,
      reviewer_note text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL,
      started_at timestamptz,
      decided_at timestamptz
    )`,
    // One waiting submission per app (CONTRACT.md: submission.already_pending), also under races.
    `CREATE UNIQUE INDEX app_submissions_waiting ON app_submissions (app_id)
      WHERE status IN ('submitted', 'in_review')`,
    'CREATE INDEX app_submissions_app ON app_submissions (app_id, created_at DESC, id DESC)',
    // The review queue, oldest first within a status.
    'CREATE INDEX app_submissions_queue ON app_submissions (status, created_at, id)',
    // The store listing of an app: what the last approved submission listed.
    `CREATE TABLE store_listings (
      app_id text PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
      submission_id text NOT NULL REFERENCES app_submissions(id),
      tagline text NOT NULL,
      description_en text NOT NULL,
      description_es text NOT NULL,
      category text NOT NULL,
      app_url text NOT NULL,
      scope_justifications jsonb NOT NULL,
      published_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    )`,
    'CREATE INDEX store_listings_category ON store_listings (category)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP TABLE store_listings', 'DROP TABLE app_submissions']);
}
