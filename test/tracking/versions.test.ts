import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOUR } from '../../src/lib/clock.ts';
import { reportStalls } from '../../src/modules/tracking/stalls.ts';
import { type Receiver, startReceiver, testWorker, verify } from '../delivery/support.ts';
import { call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;
let receiver: Receiver;

beforeAll(async () => {
  w = await startWaybill();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

async function drain(): Promise<void> {
  const worker = testWorker(w);
  await worker.tick();
  await worker.stop();
}

/** A message with the ids Waybill made replaced by names, so that the rest compares byte for byte. */
function withNames(body: string, names: Record<string, string>): string {
  let text = body;
  for (const [value, name] of Object.entries(names)) text = text.replaceAll(value, name);
  return text;
}

describe('event version 2026-11-01', () => {
  it('a status message stays byte for byte what it was before the tracking fields (fixture)', async () => {
    w.clock.set('2026-11-30T09:00:00.000Z');
    const company = await createCompany(w);
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.status_changed'], api_version: '2026-11-01' },
    });
    expect(endpoint.status).toBe(201);
    const shipment = await createShipment(w, company.liveToken, {
      recipient_name: 'Grace Hopper',
      recipient_email: 'grace@example.test',
      external_ref: 'ORDER-42',
      payment_mode: 'cod',
      cod_amount_minor: 4599,
      parcels: [{ weight_grams: 1200, reference: 'box 1' }],
    });
    w.clock.advance(60_000);
    const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    expect(moved.status).toBe(200);
    await drain();
    const message = receiver.received.at(-1);
    expect(message).toBeDefined();
    const event = verify(message as never, endpoint.body.secret, w.clock.now()) as Json;
    const named = withNames((message as { body: string }).body, {
      [event.id]: 'evt_ID',
      [shipment.id]: 'shp_ID',
      [shipment.tracking_number]: 'TRACKING',
      [company.tenantId]: 'TENANT',
    });
    const fixture = readFileSync(
      new URL('./fixtures/2026-11-01-status-changed.txt', import.meta.url),
      'utf8',
    );
    expect(named).toBe(fixture.trimEnd());
  });
});

describe('both versions at once', () => {
  it('one event reaches an endpoint of each version, each message in its own version; replay keeps it', async () => {
    const company = await createCompany(w);
    const old = await startReceiver();
    const latest = await startReceiver();
    try {
      const a = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { url: old.url, event_types: ['shipment.status_changed'], api_version: '2026-11-01' },
      });
      expect(a.body.api_version).toBe('2026-11-01');
      const b = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: {
          url: latest.url,
          event_types: ['shipment.status_changed', 'shipment.checkpoint_added', 'shipment.eta_changed'],
        },
      });
      expect(b.status).toBe(201);
      expect(b.body.api_version).toBe('2026-12-01');

      // The new types are not in 2026-11-01: refused on create and on PATCH, nothing changed.
      const refused = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: {
          url: old.url,
          event_types: ['shipment.created', 'shipment.stalled'],
          api_version: '2026-11-01',
        },
      });
      expect(refused.status).toBe(422);
      expect(refused.body).toMatchObject({
        code: 'webhook_endpoint.event_type_not_in_version',
        errors: [{ path: '/event_types/1' }],
      });
      const back = await call(w, 'PATCH', `/v1/webhook-endpoints/${b.body.id}`, {
        token: company.liveToken,
        body: { api_version: '2026-11-01' },
      });
      expect(back.status).toBe(422);
      expect(back.body.code).toBe('webhook_endpoint.event_type_not_in_version');
      const added = await call(w, 'PATCH', `/v1/webhook-endpoints/${a.body.id}`, {
        token: company.liveToken,
        body: { event_types: ['shipment.status_changed', 'shipment.eta_changed'] },
      });
      expect(added.status).toBe(422);
      expect(
        (await call(w, 'GET', `/v1/webhook-endpoints/${b.body.id}`, { token: company.liveToken })).body
          .api_version,
      ).toBe('2026-12-01');

      const shipment = await createShipment(w, company.liveToken, { carrier: { code: 'dhl', name: 'DHL' } });
      const estimate = {
        earliest: '2026-12-04T08:00:00Z',
        latest: '2026-12-04T18:00:00Z',
        source: 'carrier',
      };
      const checkpoint = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
        token: company.liveToken,
        body: {
          occurred_at: '2026-12-02T08:00:00Z',
          message: 'Collected',
          status: 'picked_up',
          estimated_delivery: estimate,
        },
      });
      expect(checkpoint.status).toBe(201);
      await drain();

      const oldMessages = old.received.map((m) => verify(m, a.body.secret, w.clock.now()) as Json);
      const newMessages = latest.received.map((m) => verify(m, b.body.secret, w.clock.now()) as Json);
      expect(oldMessages.map((m) => [m.type, m.api_version])).toEqual([
        ['shipment.status_changed', '2026-11-01'],
      ]);
      expect(newMessages.map((m) => [m.type, m.api_version]).sort()).toEqual([
        ['shipment.checkpoint_added', '2026-12-01'],
        ['shipment.eta_changed', '2026-12-01'],
        ['shipment.status_changed', '2026-12-01'],
      ]);
      const [oldMove] = oldMessages;
      const newMove = newMessages.find((m) => m.type === 'shipment.status_changed');
      // One event: the same id (webhook-id), two shapes.
      expect(newMove.id).toBe(oldMove.id);
      expect(oldMove.data.shipment).not.toHaveProperty('carrier');
      expect(oldMove.data).not.toHaveProperty('checkpoint');
      expect(newMove.data.shipment.carrier).toEqual({ code: 'dhl', name: 'DHL' });
      expect(newMove.data.checkpoint).toEqual(checkpoint.body.checkpoint);
      const eta = newMessages.find((m) => m.type === 'shipment.eta_changed');
      expect(eta.data).toMatchObject({ previous_estimated_delivery: null, delayed: false });
      const addedMessage = newMessages.find((m) => m.type === 'shipment.checkpoint_added');
      expect(addedMessage.data.checkpoint.id).toBe(checkpoint.body.checkpoint.id);
      expect(addedMessage.data.shipment).toEqual(checkpoint.body.shipment);

      // The estimate: the same again is no change; a later latest is a delay.
      const same = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
        token: company.liveToken,
        body: { estimated_delivery: estimate },
      });
      expect(same.status).toBe(200);
      const later = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
        token: company.liveToken,
        body: { estimated_delivery: { ...estimate, latest: '2026-12-05T18:00:00Z' } },
      });
      expect(later.status).toBe(200);
      await drain();
      const etas = latest.received
        .map((m) => verify(m, b.body.secret, w.clock.now()) as Json)
        .filter((m) => m.type === 'shipment.eta_changed');
      expect(etas.map((m) => m.data.delayed)).toEqual([false, true]);
      expect(etas[1].data.previous_estimated_delivery.latest).toBe('2026-12-04T18:00:00.000Z');

      // A replay resends its delivery's version, byte for byte.
      const deliveries = await call(w, 'GET', `/v1/webhook-endpoints/${b.body.id}/deliveries?limit=100`, {
        token: company.liveToken,
      });
      const delivery = deliveries.body.data.find((d: Json) => d.event_type === 'shipment.status_changed');
      const sent = latest.received.find((m) => JSON.parse(m.body).type === 'shipment.status_changed');
      const replayed = await call(w, 'POST', `/v1/webhook-deliveries/${delivery.id}/replay`, {
        token: company.liveToken,
      });
      expect(replayed.status).toBe(200);
      expect(latest.received.at(-1)?.body).toBe(sent?.body);
      const oldDeliveries = await call(w, 'GET', `/v1/webhook-endpoints/${a.body.id}/deliveries`, {
        token: company.liveToken,
      });
      await call(w, 'POST', `/v1/webhook-deliveries/${oldDeliveries.body.data[0].id}/replay`, {
        token: company.liveToken,
      });
      expect(old.received.at(-1)?.body).toBe(old.received[0]?.body);
    } finally {
      await old.close();
      await latest.close();
    }
  });

  it('the catalogue answers each version: the new types in 2026-12-01 only, each schema of its version', async () => {
    const company = await createCompany(w);
    const types = async (query: string) => {
      const answer = await call(w, 'GET', `/v1/webhook-event-types${query}`, { token: company.liveToken });
      expect(answer.status).toBe(200);
      return answer.body.data as Json[];
    };
    const first = await types('?api_version=2026-11-01');
    const second = await types('?api_version=2026-12-01');
    const strip = (list: Json[]) => list.map((t) => [t.type, t.schema]);
    expect(strip(await types(''))).toEqual(strip(second));
    expect(first.map((t) => t.type)).not.toContain('shipment.checkpoint_added');
    for (const type of ['shipment.checkpoint_added', 'shipment.eta_changed', 'shipment.stalled'])
      expect(second.map((t) => t.type)).toContain(type);
    for (const entry of first) expect(entry.schema.$id).toBe(`urn:waybill:events:2026-11-01:${entry.type}`);
    for (const entry of second) {
      expect(entry.schema.$id).toBe(`urn:waybill:events:2026-12-01:${entry.type}`);
      expect(entry.example.api_version).toBe('2026-12-01');
    }
    const moved = second.find((t) => t.type === 'shipment.status_changed');
    expect(
      Object.keys(
        moved.schema.properties.data.$ref
          ? moved.schema.$defs[moved.schema.properties.data.$ref.split('/').at(-1)].properties
          : {},
      ),
    ).toContain('checkpoint');
    expect(
      (await call(w, 'GET', '/v1/webhook-event-types?api_version=2025-01-01', { token: company.liveToken }))
        .status,
    ).toBe(400);
  });

  it('shipment.stalled is told once per stall, by the clock (default 72 hours)', async () => {
    const company = await createCompany(w);
    const receiver2 = await startReceiver();
    try {
      const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { url: receiver2.url, event_types: ['shipment.stalled'] },
      });
      expect(endpoint.status).toBe(201);
      const shipment = await createShipment(w, company.liveToken);
      const quiet = await createShipment(w, company.liveToken, { status: 'draft' });
      // Each message verified when it arrives (its signature's time is the clock's then).
      const verified: Json[] = [];
      const stalls = () => {
        for (const m of receiver2.received.slice(verified.length))
          verified.push(verify(m, endpoint.body.secret, w.clock.now()) as Json);
        return verified;
      };
      w.clock.advance(71 * HOUR);
      await reportStalls(w.ctx);
      await drain();
      expect(stalls()).toEqual([]);
      w.clock.advance(2 * HOUR);
      await reportStalls(w.ctx);
      await reportStalls(w.ctx);
      await drain();
      expect(stalls().map((m) => [m.type, m.api_version, m.data.shipment.id, m.data.since])).toEqual([
        ['shipment.stalled', '2026-12-01', shipment.id, shipment.created_at],
      ]);
      expect(stalls().map((m) => m.data.shipment.id)).not.toContain(quiet.id);
      // A checkpoint ends the stall; the next one is told again.
      const scan = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
        token: company.liveToken,
        body: { occurred_at: w.clock.now().toISOString(), message: 'Found it' },
      });
      expect(scan.status).toBe(201);
      w.clock.advance(73 * HOUR);
      await reportStalls(w.ctx);
      await drain();
      expect(stalls()).toHaveLength(2);
      expect(stalls()[1].data.since).toBe(scan.body.checkpoint.created_at);
    } finally {
      await receiver2.close();
    }
  });
});
