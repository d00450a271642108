import { describe, expect, it } from 'vitest';
import { call, createCompany, createShipment } from '../support/api.ts';
import {
  advance,
  deliveriesOf,
  insertEndpoint,
  queueOf,
  testWorker,
  useWaybillAndReceiver,
} from './support.ts';

/**
 * The queue is kept apart from the delivery log by triggers (migration 0014, decision 0017): a
 * delivery is in it exactly while it is pending with a time set, whichever statement changed it.
 */
describe('the queue follows the delivery log', () => {
  const env = useWaybillAndReceiver();

  /** The log's pending deliveries with a time set, as the queue should hold them. */
  async function expectQueueToMatchLog(endpointId: string) {
    const pending = (await deliveriesOf(env.w, endpointId))
      .filter((d) => d.status === 'pending' && d.next_attempt_at !== null)
      .map((d) => ({ id: d.id, at: new Date(d.next_attempt_at as Date).getTime() }))
      .sort((x, y) => x.id.localeCompare(y.id));
    const queued = (await queueOf(env.w, endpointId))
      .map((q) => ({ id: q.delivery_id, at: new Date(q.next_attempt_at).getTime() }))
      .sort((x, y) => x.id.localeCompare(y.id));
    expect(queued).toEqual(pending);
    return queued.length;
  }

  it('takes new deliveries in, lets delivered ones out, and puts a retry back in line unleased', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, {
      tenantId: company.tenantId,
      url: receiver.url,
      eventTypes: ['shipment.created'],
    });
    receiver.answer = (_req, res) => {
      res.statusCode = 503;
      res.end('later');
    };
    await createShipment(w, company.liveToken, { external_ref: 'queue-1' });
    await createShipment(w, company.liveToken, { external_ref: 'queue-2' });
    expect(await expectQueueToMatchLog(endpoint.id)).toBe(2);

    const worker = testWorker(w);
    await worker.tick();
    // Both failed: still pending, due later, and no worker holds them any more.
    const retried = await queueOf(env.w, endpoint.id);
    expect(retried).toHaveLength(2);
    expect(retried.every((q) => q.locked_by === null && q.locked_until === null)).toBe(true);
    expect(retried.every((q) => new Date(q.next_attempt_at).getTime() > w.clock.now().getTime())).toBe(true);
    await expectQueueToMatchLog(endpoint.id);

    receiver.answer = (_req, res) => res.end('ok');
    advance(w.clock, 60 * 60 * 1000);
    await worker.tick();
    await worker.stop();
    expect((await deliveriesOf(w, endpoint.id)).map((d) => d.status)).toEqual(['succeeded', 'succeeded']);
    expect(await expectQueueToMatchLog(endpoint.id)).toBe(0);
  });

  it('drops cancelled deliveries, takes replayed ones back, and forgets a deleted endpoint', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const created = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(created.status).toBe(201);
    const endpointId = (created.body as { id: string }).id;
    await createShipment(w, company.liveToken, { external_ref: 'queue-3' });
    await createShipment(w, company.liveToken, { external_ref: 'queue-4' });
    expect(await expectQueueToMatchLog(endpointId)).toBe(2);

    const disabled = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpointId}`, {
      token: company.liveToken,
      body: { enabled: false },
    });
    expect(disabled.status).toBe(200);
    expect((await deliveriesOf(w, endpointId)).map((d) => d.status)).toEqual(['cancelled', 'cancelled']);
    expect(await expectQueueToMatchLog(endpointId)).toBe(0);

    await call(w, 'PATCH', `/v1/webhook-endpoints/${endpointId}`, {
      token: company.liveToken,
      body: { enabled: true },
    });
    const replayed = await call(w, 'POST', `/v1/webhook-endpoints/${endpointId}/deliveries/replay`, {
      token: company.liveToken,
    });
    expect(replayed.status).toBe(200);
    expect(replayed.body).toEqual({ replayed: 2 });
    expect(await expectQueueToMatchLog(endpointId)).toBe(2);

    const deleted = await call(w, 'DELETE', `/v1/webhook-endpoints/${endpointId}`, {
      token: company.liveToken,
    });
    expect(deleted.status).toBe(204);
    expect(await queueOf(env.w, endpointId)).toHaveLength(0);
  });
});
