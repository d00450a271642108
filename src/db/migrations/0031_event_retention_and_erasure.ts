import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 22 item 1 (decision 0022): an erasure reaches every copy of a recipient's data, and events
 * are kept 30 days as the delivery history is.
 *
 * - Deliveries made before migration 0016 still hold a copy of their event's envelope. It is the
 *   same text as the event's (0016 copied it from there), so it goes: the delivery reads its
 *   event's, and an erasure, which rewrites the event's envelope, then reaches what it sends.
 * - The retention job removes events by age: an index on their time makes that a range read.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `UPDATE webhook_deliveries d SET payload = NULL FROM events ev
      WHERE ev.id = d.event_id AND d.payload IS NOT NULL AND d.payload = ev.payload`,
    'CREATE INDEX events_created ON events (created_at)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP INDEX events_created']);
}
