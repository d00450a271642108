import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * The outbound budget (issue 22 item 5, decision 0028): how many requests Waybill sent on someone's
 * behalf (submission checks, app-event tests and replays, endpoint test sends and replays) in a
 * window, per account and per target host. One row per subject and window, so every process
 * counts in the same place.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE outbound_budget (
      subject text NOT NULL,
      window_start timestamptz NOT NULL,
      sends integer NOT NULL,
      PRIMARY KEY (subject, window_start)
    )`,
    'CREATE INDEX outbound_budget_window_start ON outbound_budget (window_start)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP TABLE outbound_budget']);
}
