import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * Issue 51 item 5: a test shipment walked through a scenario's checkpoints by the worker, on the
 * service's clock. One walk per shipment (a new one replaces it); `step` is the next checkpoint
 * of the scenario and `next_at` when it is due. A company table (distributed by tenant_id).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    `CREATE TABLE shipment_simulations (
      tenant_id text NOT NULL,
      shipment_id text NOT NULL,
      id text NOT NULL,
      scenario text NOT NULL,
      step integer NOT NULL,
      next_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (shipment_id, tenant_id),
      FOREIGN KEY (shipment_id, tenant_id) REFERENCES shipments (id, tenant_id) ON DELETE CASCADE
    )`,
    'CREATE INDEX shipment_simulations_due ON shipment_simulations (next_at)',
  ]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, ['DROP TABLE shipment_simulations']);
}
