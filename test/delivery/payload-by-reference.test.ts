import { PGlite } from '@electric-sql/pglite';
import { Kysely, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { SerializedPGliteDialect } from '../../src/db/drivers.ts';
import { migrations } from '../../src/db/migrations/index.ts';
import { call, createCompany, createShipment } from '../support/api.ts';
import { engine } from '../support/harness.ts';
import { deliveriesOf, insertEndpoint, testWorker, useWaybillAndReceiver, verify } from './support.ts';

/** A shipment event's deliveries send the event's envelope, kept once with the event (migration 0016). */
describe('payload by reference', () => {
  const env = useWaybillAndReceiver();

  it('sends the envelope of a delivery written before migration 0016 from the delivery itself', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    await createShipment(w, company.liveToken);
    const [delivery] = await deliveriesOf(w, endpoint.id);
    if (!delivery) throw new Error('a delivery expected');
    expect(delivery.payload).toBeNull();
    // As a row written before the migration holds it: its own copy, which is what it sends (here
    // the event's envelope with another external_ref, to tell them apart).
    const event = await w.ctx.db
      .selectFrom('events')
      .select('payload')
      .where('id', '=', delivery.event_id)
      .executeTakeFirstOrThrow();
    const envelope = JSON.parse(event.payload);
    envelope.data.shipment.external_ref = 'kept in the delivery';
    const ownCopy = JSON.stringify(envelope);
    await w.ctx.db
      .updateTable('webhook_deliveries')
      .set({ payload: ownCopy })
      .where('id', '=', delivery.id)
      .execute();
    const detail = await call(w, 'GET', `/v1/webhook-deliveries/${delivery.id}`, {
      token: company.liveToken,
    });
    expect(detail.body.message.body).toBe(ownCopy);

    const worker = testWorker(w);
    expect(await worker.tick()).toBe(1);
    await worker.stop();
    const message = receiver.received.at(-1);
    if (!message) throw new Error('a message expected');
    expect(message.body).toBe(ownCopy);
    expect(verify(message, endpoint.secret, w.clock.now())).toEqual(envelope);
  });

  // On a database of its own: migration 0080 is one-way, so a database at the latest goes down no
  // further than it. The SQL is the same on both engines; a fresh embedded database runs it.
  it.skipIf(engine !== 'pglite')(
    'puts every payload back into its delivery when migrated down, and reads it by reference again',
    async () => {
      const pglite = await PGlite.create();
      const db = new Kysely<unknown>({ dialect: new SerializedPGliteDialect({ pglite }) });
      const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
      expect((await migrator.migrateTo('0018_time_ordered_delivery_ids')).error).toBeUndefined();
      await sql`INSERT INTO companies (id, name, created_at, updated_at)
        VALUES ('c1', 'One', now(), now())`.execute(db);
      await sql`INSERT INTO webhook_endpoints (id, tenant_id, livemode, url, event_types, secret_sealed,
          created_at, updated_at)
        VALUES ('we_1', 'c1', true, 'http://127.0.0.1:9/hook', '["shipment.created"]', 's', now(), now())`.execute(
        db,
      );
      await sql`INSERT INTO events (id, tenant_id, livemode, type, payload, created_at)
        VALUES ('evt_1', 'c1', true, 'shipment.created', '{"n":1}', now()),
          ('evt_2', 'c1', true, 'shipment.created', '{"n":2}', now())`.execute(db);
      await sql`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status, attempt_count,
          next_attempt_at, created_at, updated_at)
        VALUES ('dlv_1', 'we_1', 'evt_1', 'shipment.created', NULL, 'pending', 0, now(), now(), now()),
          ('dlv_2', 'we_1', 'evt_2', 'shipment.created', NULL, 'succeeded', 1, NULL, now(), now())`.execute(
        db,
      );
      const payloads = async () =>
        (
          await sql<{ id: string; payload: string | null }>`
            SELECT id, payload FROM webhook_deliveries ORDER BY id`.execute(db)
        ).rows;

      const down = await migrator.migrateTo('0015_claim_and_record_functions');
      expect(down.error).toBeUndefined();
      expect((down.results ?? []).map((r) => r.migrationName)).toEqual([
        '0018_time_ordered_delivery_ids',
        '0017_fan_out_function',
        '0016_delivery_payload_by_reference',
      ]);
      expect(await payloads()).toEqual([
        { id: 'dlv_1', payload: '{"n":1}' },
        { id: 'dlv_2', payload: '{"n":2}' },
      ]);

      expect((await migrator.migrateToLatest()).error).toBeUndefined();
      // A copy that is its event's envelope goes again (migration 0031: an erasure rewrites the
      // event's, which the delivery then sends).
      expect(await payloads()).toEqual([
        { id: 'dlv_1', payload: null },
        { id: 'dlv_2', payload: null },
      ]);
      // Migration 0080: each delivery has its company, and the pending one is queued in its row.
      const { rows } = await sql<{ id: string; tenant_id: string; queued: boolean }>`
        SELECT id, tenant_id, due_at IS NOT NULL AND due_at = next_attempt_at AS queued
        FROM webhook_deliveries ORDER BY id`.execute(db);
      expect(rows).toEqual([
        { id: 'dlv_1', tenant_id: 'c1', queued: true },
        { id: 'dlv_2', tenant_id: 'c1', queued: false },
      ]);
      // And it is one-way: it refuses to go down past it, and changes nothing.
      const refused = await migrator.migrateTo('0079_tenant_keys');
      expect(String(refused.error)).toMatch(/one-way/);
      expect(
        (await sql`SELECT 1 FROM webhook_deliveries WHERE due_at IS NOT NULL`.execute(db)).rows,
      ).toHaveLength(1);
      await db.destroy();
    },
    180_000,
  );
});
