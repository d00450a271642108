import { describe, expect, it } from 'vitest';
import { call, createCompany, createShipment } from '../support/api.ts';
import {
  deliveriesOf,
  insertEndpoint,
  queueOf,
  testWorker,
  useWaybillAndReceiver,
  verify,
} from './support.ts';

describe('delivery through the worker', () => {
  const env = useWaybillAndReceiver();

  it('delivers each event once, signed, with the headers of spec 2.6', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    const shipment = await createShipment(w, company.liveToken);
    await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    expect(await worker.tick()).toBe(2);
    await worker.stop();
    expect(receiver.received).toHaveLength(2);
    const events = await w.ctx.db.selectFrom('events').selectAll().orderBy('created_at').execute();
    for (const message of receiver.received) {
      const envelope = verify(message, endpoint.secret, w.clock.now()) as { id: string; type: string };
      const event = events.find((e) => e.id === envelope.id);
      expect(message.body).toBe(event?.payload);
      expect(message.headers['webhook-id']).toBe(envelope.id);
      expect(message.headers['webhook-event']).toBe(envelope.type);
      expect(message.headers['content-type']).toBe('application/json');
      expect(message.headers['user-agent']).toBe(
        `Waybill-Webhooks/1.0 (+${w.ctx.config.webUrl}/docs/webhooks)`,
      );
      expect(message.headers['webhook-timestamp']).toBe(String(Math.floor(w.clock.now().getTime() / 1000)));
      expect(message.headers['accept-encoding']).toBeUndefined();
    }
    const deliveries = await deliveriesOf(w, endpoint.id);
    expect(deliveries.map((d) => d.status)).toEqual(['succeeded', 'succeeded']);
    expect(deliveries.every((d) => d.attempt_count === 1)).toBe(true);
    expect(await queueOf(w, endpoint.id)).toHaveLength(0);
  });
});
