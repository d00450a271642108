import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
      body: { url: receiver.url, event_types: ['shipment.status_changed'] },
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
