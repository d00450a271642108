import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 51 (tracking), decision 0080: what a shipment carries beyond its status, and its timeline.
 *
 * - The shipment's tracking fields: `carrier` `{code, name}`, `destination` (its `line1` is the
 *   recipient's personal data, erased with the name), `estimated_delivery`, `proof_of_delivery`
 *   and a copy of its newest checkpoint (`latest_checkpoint`, with `latest_checkpoint_at`, its
 *   `occurred_at`, to order the next ones) as jsonb; `carrier_tracking_number` and `sub_status` as
 *   text. `activity_at` is the last checkpoint or move (a stall is measured from it) and
 *   `stall_reported_at` the stall already told (once per stall).
 * - `shipment_checkpoints`: the timeline, a company table (distributed by tenant_id on Citus) keyed
 *   like the others, one `external_id` per shipment at most, listed newest `occurred_at` first.
 * - `companies.stall_after_hours`: how long a shipment may go without news (default 72).
 */
const UP = [
  `ALTER TABLE shipments
    ADD COLUMN carrier jsonb,
    ADD COLUMN carrier_tracking_number text,
    ADD COLUMN destination jsonb,
    ADD COLUMN sub_status text,
    ADD COLUMN estimated_delivery jsonb,
    ADD COLUMN proof_of_delivery jsonb,
    ADD COLUMN latest_checkpoint jsonb,
    ADD COLUMN latest_checkpoint_at timestamptz,
    ADD COLUMN activity_at timestamptz,
    ADD COLUMN stall_reported_at timestamptz`,
  `CREATE INDEX shipments_carrier_tracking_number ON shipments (tenant_id, carrier_tracking_number)
    WHERE carrier_tracking_number IS NOT NULL`,
  `CREATE TABLE shipment_checkpoints (
    id text NOT NULL,
    tenant_id text NOT NULL,
    shipment_id text NOT NULL,
    occurred_at timestamptz NOT NULL,
    location jsonb,
    message text NOT NULL,
    status text,
    sub_status text,
    estimated_delivery jsonb,
    source text NOT NULL,
    external_id text,
    applied boolean NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (id, tenant_id),
    FOREIGN KEY (shipment_id, tenant_id) REFERENCES shipments (id, tenant_id) ON DELETE CASCADE
  )`,
  `CREATE UNIQUE INDEX shipment_checkpoints_external_id
    ON shipment_checkpoints (shipment_id, external_id, tenant_id) WHERE external_id IS NOT NULL`,
  `CREATE INDEX shipment_checkpoints_timeline
    ON shipment_checkpoints (tenant_id, shipment_id, occurred_at DESC, id DESC)`,
  'ALTER TABLE companies ADD COLUMN stall_after_hours integer NOT NULL DEFAULT 72',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, UP);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'ALTER TABLE companies DROP COLUMN stall_after_hours',
    'DROP TABLE shipment_checkpoints',
    'DROP INDEX shipments_carrier_tracking_number',
    `ALTER TABLE shipments
      DROP COLUMN carrier, DROP COLUMN carrier_tracking_number, DROP COLUMN destination,
      DROP COLUMN sub_status, DROP COLUMN estimated_delivery, DROP COLUMN proof_of_delivery,
      DROP COLUMN latest_checkpoint, DROP COLUMN latest_checkpoint_at, DROP COLUMN activity_at,
      DROP COLUMN stall_reported_at`,
  ]);
}
