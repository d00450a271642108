import { Migrator } from 'kysely/migration';
import { describe, expect, it } from 'vitest';
import { migrations } from '../../src/db/migrations/index.ts';
import { call, createCompany, createShipment } from '../support/api.ts';
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

  it('puts every payload back into its delivery when migrated down, and reads it by reference again', async () => {
    const { w } = env;
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: 'http://127.0.0.1:9/hook' });
    await createShipment(w, company.liveToken);
    await createShipment(w, company.liveToken);
    const eventPayloads = async () => {
      const events = await w.ctx.db.selectFrom('events').select(['id', 'payload']).execute();
      return new Map(events.map((e) => [e.id, e.payload]));
    };
    const migrator = new Migrator({ db: w.ctx.db, provider: { getMigrations: async () => migrations } });

    const down = await migrator.migrateTo('0015_claim_and_record_functions');
    expect(down.error).toBeUndefined();
    // Every later migration goes down first; the last three are the ones this test is about.
    const results = down.results ?? [];
    expect(results.every((r) => r.status === 'Success')).toBe(true);
    expect(results.slice(-3).map((r) => r.migrationName)).toEqual([
      '0018_time_ordered_delivery_ids',
      '0017_fan_out_function',
      '0016_delivery_payload_by_reference',
    ]);
    const payloads = await eventPayloads();
    const restored = await deliveriesOf(w, endpoint.id);
    expect(restored).toHaveLength(2);
    for (const delivery of restored) expect(delivery.payload).toBe(payloads.get(delivery.event_id));

    const up = await migrator.migrateToLatest();
    expect(up.error).toBeUndefined();
    // A copy that is its event's envelope goes again (migration 0031: an erasure rewrites the
    // event's, which the delivery then sends); deliveries written from now on hold none either.
    const before = await deliveriesOf(w, endpoint.id);
    for (const delivery of before) {
      expect(delivery.payload).toBeNull();
      const shown = await call(w, 'GET', `/v1/webhook-deliveries/${delivery.id}`, {
        token: company.liveToken,
      });
      expect(shown.body.message.body).toBe(payloads.get(delivery.event_id));
    }
    await createShipment(w, company.liveToken);
    const latest = (await deliveriesOf(w, endpoint.id)).find((d) => !before.some((b) => b.id === d.id));
    expect(latest).toBeDefined();
    expect(latest?.payload).toBeNull();
    const detail = await call(w, 'GET', `/v1/webhook-deliveries/${latest?.id}`, { token: company.liveToken });
    expect(detail.body.message.body).toBe((await eventPayloads()).get(latest?.event_id ?? ''));
  });
});
