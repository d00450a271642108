import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DAY } from '../../../src/lib/clock.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { createEndpoint, type Receiver, startReceiver, verify } from './support.ts';

describe('deliveries, test messages and replays', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    company = await createCompany(w);
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.answer = { status: 200, body: 'ok' };
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  const get = (path: string) => call(w, 'GET', path, { token: company.liveToken });
  const post = (path: string, body?: unknown) => call(w, 'POST', path, { token: company.liveToken, body });

  async function deliveriesOf(endpointId: string, query = ''): Promise<Json[]> {
    const page = await get(`/v1/webhook-endpoints/${endpointId}/deliveries${query}`);
    expect(page.status).toBe(200);
    return page.body.data;
  }

  it('lists the event type catalogue with an example message of the real shipment shape', async () => {
    // 2026-11-01's list (tests/tracking/versions.test.ts: 2026-12-01's).
    const types = await get('/v1/webhook-event-types?api_version=2026-11-01');
    expect(types.status).toBe(200);
    expect(types.body.data.map((t: Json) => [t.type, t.sent_to])).toEqual([
      ['shipment.created', 'webhook_endpoints'],
      ['shipment.status_changed', 'webhook_endpoints'],
      ['shipment.delivered', 'webhook_endpoints'],
      ['shipment.exception', 'webhook_endpoints'],
      ['webhook_endpoint.failing', 'webhook_endpoints'],
      ['webhook_endpoint.disabled', 'webhook_endpoints'],
      ['webhook_endpoint.recovered', 'webhook_endpoints'],
      ['app.uninstalled', 'app_events_url'],
      ['app.scopes_updated', 'app_events_url'],
      ['customer.data_request', 'app_events_url'],
      ['customer.redact', 'app_events_url'],
    ]);
    // What an endpoint can subscribe to, as clients read it before app events joined the list.
    const subscribable = await get(
      '/v1/webhook-event-types?sent_to=webhook_endpoints&api_version=2026-11-01',
    );
    expect(subscribable.body.data.map((t: Json) => t.type)).toEqual(
      types.body.data.slice(0, 7).map((t: Json) => t.type),
    );
    const created = await createShipment(w, company.liveToken);
    // The shipment of 2026-11-01, as that version's examples carry it.
    const shipment = (
      await call(w, 'GET', `/v1/shipments/${created.id}`, {
        token: company.liveToken,
        headers: { 'waybill-version': '2026-11-01' },
      })
    ).body;
    for (const entry of subscribable.body.data.filter((t: Json) => t.type.startsWith('shipment.'))) {
      expect(entry.description.length).toBeGreaterThan(10);
      expect(entry.example).toMatchObject({ type: entry.type, tenant_id: company.tenantId, livemode: true });
      expect(entry.example.id).toMatch(/^evt_/);
      expect(entry.example.api_version).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(Object.keys(entry.example.data).sort()).toEqual(['previous_status', 'shipment', 'status']);
      expect(Object.keys(entry.example.data.shipment).sort()).toEqual(Object.keys(shipment).sort());
    }
    const exception = types.body.data.find((t: Json) => t.type === 'shipment.exception');
    expect(exception.example.data).toMatchObject({ status: 'exception', shipment: { status: 'exception' } });
    const appType = await post('/v1/webhook-endpoints', {
      url: receiver.url,
      event_types: ['app.uninstalled'],
    });
    expect(appType.status).toBe(422);
    expect(appType.body.code).toBe('webhook_endpoint.event_type_for_apps');
    expect(appType.body.detail).toContain('events URL');
  });

  it("sends a test message and answers the receiver's reply; the message verifies and is logged", async () => {
    const endpoint = await createEndpoint(w, company.liveToken, {
      url: receiver.url,
      event_types: ['shipment.delivered'],
    });
    receiver.answer = { status: 202, body: 'thanks' };
    const sent = await post(`/v1/webhook-endpoints/${endpoint.id}/test`);
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status_code: 202, response_body: 'thanks', error: null });
    expect(sent.body.delivery_id).toMatch(/^dlv_/);
    expect(sent.body.duration_ms).toBeGreaterThanOrEqual(0);

    expect(receiver.received).toHaveLength(1);
    const message = receiver.received[0] as (typeof receiver.received)[number];
    const envelope = verify(endpoint.secret, message, w.clock.now());
    expect(envelope).toMatchObject({
      type: 'shipment.delivered',
      test: true,
      livemode: true,
      tenant_id: company.tenantId,
      data: { status: 'delivered', previous_status: 'out_for_delivery' },
    });
    expect(message.headers['webhook-id']).toBe(envelope.id);
    expect(message.headers['webhook-event']).toBe('shipment.delivered');

    const detail = await get(`/v1/webhook-deliveries/${sent.body.delivery_id}`);
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({
      id: sent.body.delivery_id,
      endpoint_id: endpoint.id,
      event_id: envelope.id,
      event_type: 'shipment.delivered',
      status: 'succeeded',
      attempt_count: 1,
      next_attempt_at: null,
      last_status_code: 202,
    });
    expect(detail.body.message.body).toBe(message.body);
    expect(detail.body.message.headers['webhook-signature']).toBe(message.headers['webhook-signature']);
    expect(detail.body.attempts).toEqual([
      {
        attempted_at: w.clock.now().toISOString(),
        duration_ms: sent.body.duration_ms,
        status_code: 202,
        error: null,
        response_body: 'thanks',
        trigger: 'test',
      },
    ]);

    // Another type on request; an unknown one is refused.
    const created = await post(`/v1/webhook-endpoints/${endpoint.id}/test`, {
      event_type: 'shipment.created',
    });
    expect(created.status).toBe(200);
    expect(JSON.parse(receiver.received[1]?.body ?? '{}').type).toBe('shipment.created');
    const unknown = await post(`/v1/webhook-endpoints/${endpoint.id}/test`, { event_type: 'shipment.lost' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('webhook_endpoint.invalid_event_type');
  });

  it('replays a delivery as one more attempt with the same webhook-id, signed by both secrets after a rotation', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, { url: receiver.url });
    await createShipment(w, company.liveToken);
    const [delivery] = await deliveriesOf(endpoint.id);
    expect(delivery).toMatchObject({ status: 'pending', attempt_count: 0, event_type: 'shipment.created' });

    const pending = await get(`/v1/webhook-deliveries/${delivery.id}`);
    expect(pending.body.attempts).toEqual([]);
    expect(pending.body.message.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': delivery.event_id,
      'webhook-event': 'shipment.created',
    });

    receiver.answer = { status: 500, body: 'down' };
    const failed = await post(`/v1/webhook-deliveries/${delivery.id}/replay`);
    expect(failed.status).toBe(200);
    expect(failed.body).toMatchObject({ delivery_id: delivery.id, status_code: 500, trigger: 'replay' });

    const rotated = await post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`);
    receiver.answer = { status: 200, body: 'ok' };
    w.clock.advance(60_000);
    const ok = await post(`/v1/webhook-deliveries/${delivery.id}/replay`);
    expect(ok.body).toMatchObject({ status_code: 200, delivery_status: 'succeeded', trigger: 'replay' });

    expect(receiver.received.map((m) => m.headers['webhook-id'])).toEqual([
      delivery.event_id,
      delivery.event_id,
    ]);
    const last = receiver.received[1] as (typeof receiver.received)[number];
    expect(String(last.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verify(endpoint.secret, last, w.clock.now()).id).toBe(delivery.event_id);
    expect(verify(rotated.body.secret, last, w.clock.now()).id).toBe(delivery.event_id);

    const detail = await get(`/v1/webhook-deliveries/${delivery.id}`);
    expect(detail.body.status).toBe('succeeded');
    expect(detail.body.attempts.map((a: Json) => [a.trigger, a.status_code])).toEqual([
      ['replay', 500],
      ['replay', 200],
    ]);
    expect(detail.body.message.headers['webhook-timestamp']).toBe(String(w.clock.now().getTime() / 1000));
  });

  it('bulk replay queues the failed and cancelled deliveries of the last 7 days only', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, { url: receiver.url });
    const path = `/v1/webhook-endpoints/${endpoint.id}`;
    const enable = () => call(w, 'PATCH', path, { token: company.liveToken, body: { enabled: true } });

    // Old: one failed (the receiver said 410, which also disables and cancels the rest), one cancelled.
    async function failOneCancelOne(): Promise<[Json, Json]> {
      await createShipment(w, company.liveToken);
      w.clock.advance(1000);
      await createShipment(w, company.liveToken);
      const [second, first] = await deliveriesOf(endpoint.id, '?status=pending');
      receiver.answer = { status: 410, body: 'gone' };
      const gone = await post(`/v1/webhook-deliveries/${first.id}/replay`);
      expect(gone.body.delivery_status).toBe('failed');
      const disabled = await get(path);
      expect(disabled.body).toMatchObject({ enabled: false, disabled_reason: 'gone' });
      expect((await get(`/v1/webhook-deliveries/${second.id}`)).body.status).toBe('cancelled');
      return [first, second];
    }
    const old = await failOneCancelOne();
    await post(`${path}/test`); // a failed test message is never replayed
    await enable();
    w.clock.advance(8 * DAY);
    const recent = await failOneCancelOne();

    const refused = await post(`${path}/deliveries/replay`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('webhook_endpoint.disabled');
    await enable();

    const replayed = await post(`${path}/deliveries/replay`);
    expect(replayed.status).toBe(200);
    expect(replayed.body).toEqual({ replayed: 2 });
    for (const delivery of recent) {
      const detail = await get(`/v1/webhook-deliveries/${delivery.id}`);
      expect(detail.body).toMatchObject({ status: 'pending', next_attempt_at: w.clock.now().toISOString() });
    }
    expect((await get(`/v1/webhook-deliveries/${old[0].id}`)).body.status).toBe('failed');
    expect((await get(`/v1/webhook-deliveries/${old[1].id}`)).body.status).toBe('cancelled');
    expect((await post(`${path}/deliveries/replay`)).body).toEqual({ replayed: 0 });
  });

  it('lists deliveries newest first with a status filter and a cursor', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, { url: receiver.url });
    for (let i = 0; i < 3; i += 1) {
      w.clock.advance(1000);
      await createShipment(w, company.liveToken);
    }
    const all = await deliveriesOf(endpoint.id);
    expect(all).toHaveLength(3);
    expect(all.map((d) => d.created_at)).toEqual([...all.map((d) => d.created_at)].sort().reverse());
    expect(Object.keys(all[0]).sort()).toEqual(
      [
        'attempt_count',
        'created_at',
        'endpoint_id',
        'event_id',
        'event_type',
        'id',
        'last_status_code',
        'next_attempt_at',
        'status',
        'updated_at',
      ].sort(),
    );
    await post(`/v1/webhook-deliveries/${all[1].id}/replay`);
    expect((await deliveriesOf(endpoint.id, '?status=succeeded')).map((d) => d.id)).toEqual([all[1].id]);
    expect((await deliveriesOf(endpoint.id, '?status=pending')).map((d) => d.id)).toEqual([
      all[0].id,
      all[2].id,
    ]);

    const first = await get(`/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=2`);
    expect(first.body.data.map((d: Json) => d.id)).toEqual([all[0].id, all[1].id]);
    const second = await get(
      `/v1/webhook-endpoints/${endpoint.id}/deliveries?limit=2&cursor=${first.body.next_cursor}`,
    );
    expect(second.body.data.map((d: Json) => d.id)).toEqual([all[2].id]);
    expect(second.body.next_cursor).toBeNull();

    const bad = await get(`/v1/webhook-endpoints/${endpoint.id}/deliveries?status=lost`);
    expect(bad.status).toBe(400);
    expect((await get('/v1/webhook-deliveries/dlv_unknown')).status).toBe(404);
  });
});
