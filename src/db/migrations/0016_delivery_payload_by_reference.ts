import type { Kysely } from 'kysely';
import { CLAIM } from './0015_claim_and_record_functions.ts';
import { runStatements } from './sql.ts';

/** The payload as 0015's claim returns it, and as this migration's claim does. */
const INLINE_PAYLOAD = 'SELECT d.id, d.endpoint_id, d.event_id, d.event_type, d.payload, d.status,';
const PAYLOAD_BY_REFERENCE =
  'SELECT d.id, d.endpoint_id, d.event_id, d.event_type, COALESCE(d.payload, (SELECT ev.payload FROM events ev WHERE ev.id = d.event_id)), d.status,';

/** 0015's claim function with the payload read as `payload`, replacing the one in place. */
function claimReading(payload: string): string {
  if (!CLAIM.includes(INLINE_PAYLOAD))
    throw new Error('migration 0016: the claim of 0015 is not the one expected');
  return CLAIM.replace('CREATE FUNCTION', 'CREATE OR REPLACE FUNCTION').replace(INLINE_PAYLOAD, payload);
}

/**
 * A shipment event's deliveries read the envelope from the event (issue 10 throughput; decision
 * 0019). The fan-out copied the 1 KB envelope into every delivery, and the attempt's outcome then
 * rewrote that whole row: rows written together are updated together, in one statement, so the new
 * versions never fitted on their page. Each outcome wrote the row again elsewhere, with new entries
 * in its indexes and a row lock in the WAL: 2.5 KB of WAL per delivery, half of it that copy.
 *
 * Now a shipment event's delivery holds no payload (NULL): the event keeps it, and events go only
 * with their company, which takes its endpoints' deliveries with it. App events and test messages,
 * which have no event row, keep theirs in the delivery. A delivery row is about 230 bytes, and half
 * of each page is left free (fillfactor 50), so that an outcome's update stays on its page (HOT) even
 * when every row of the page is updated in one statement: about 470 bytes a delivery on disk,
 * against about 1.2 KB before. Existing rows keep their payload.
 */
/** The claim this migration leaves in place (migration 0034's down puts it back). */
export const CLAIM_BY_REFERENCE = claimReading(PAYLOAD_BY_REFERENCE);

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE webhook_deliveries ALTER COLUMN payload DROP NOT NULL',
    'ALTER TABLE webhook_deliveries SET (fillfactor = 50)',
    CLAIM_BY_REFERENCE,
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    claimReading(INLINE_PAYLOAD),
    `UPDATE webhook_deliveries d SET payload = ev.payload FROM events ev
      WHERE d.payload IS NULL AND ev.id = d.event_id`,
    'ALTER TABLE webhook_deliveries RESET (fillfactor)',
    'ALTER TABLE webhook_deliveries ALTER COLUMN payload SET NOT NULL',
  ]);
}
