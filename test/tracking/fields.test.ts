import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startReceiver } from '../delivery/support.ts';
import { call, createApiToken, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

const CARRIER = { code: 'city-courier', name: 'City Courier' };
const DESTINATION = {
  line1: '12 Rue de la Paix',
  city: 'Paris',
  region: 'Île-de-France',
  postal_code: '75002',
  country: 'fr',
};
const ESTIMATE = { earliest: '2026-12-05T08:00:00+01:00', latest: '2026-12-06T18:00:00Z', source: 'carrier' };

/** The shipment row and its events, to show a refused request wrote nothing. */
async function snapshot(token: string, id: string): Promise<string> {
  const shipment = await call(w, 'GET', `/v1/shipments/${id}`, { token });
  const events = await call(w, 'GET', `/v1/events?shipment_id=${id}`, { token });
  return JSON.stringify([shipment.body, events.body]);
}

describe('the sub-status catalogue', () => {
  it('lists at least 15 codes, each of one status, and needs shipments:read', async () => {
    const { liveToken, owner, tenantId } = await createCompany(w);
    const catalogue = await call(w, 'GET', '/v1/shipment-sub-statuses', { token: liveToken });
    expect(catalogue.status).toBe(200);
    const codes: Json[] = catalogue.body.data;
    expect(codes.length).toBeGreaterThanOrEqual(15);
    for (const entry of codes) {
      expect(Object.keys(entry).sort()).toEqual(['code', 'description', 'status']);
      expect(entry.code.startsWith(`${entry.status}.`)).toBe(true);
    }
    expect(new Set(codes.map((c) => c.code)).size).toBe(codes.length);
    for (const code of ['in_transit.customs', 'out_for_delivery.attempted', 'delivered.locker'])
      expect(codes.map((c) => c.code)).toContain(code);
    expect((await call(w, 'GET', '/v1/shipment-sub-statuses')).status).toBe(401);
    const writeOnly = await createApiToken(w, owner, tenantId, { mode: 'live', scopes: ['webhooks:read'] });
    expect((await call(w, 'GET', '/v1/shipment-sub-statuses', { token: writeOnly })).status).toBe(403);
  });
});

describe('the tracking fields', () => {
  it('are set on create, answered normalised, and read back the same', async () => {
    const { liveToken } = await createCompany(w);
    const created = await createShipment(w, liveToken, {
      carrier: CARRIER,
      carrier_tracking_number: 'JD0146000012345678',
      destination: DESTINATION,
      sub_status: 'confirmed.label_created',
      estimated_delivery: ESTIMATE,
    });
    expect(created).toMatchObject({
      carrier: CARRIER,
      carrier_tracking_number: 'JD0146000012345678',
      destination: { ...DESTINATION, country: 'FR' },
      sub_status: 'confirmed.label_created',
      estimated_delivery: {
        earliest: '2026-12-05T07:00:00.000Z',
        latest: '2026-12-06T18:00:00.000Z',
        source: 'carrier',
      },
      proof_of_delivery: null,
      latest_checkpoint: null,
    });
    const read = await call(w, 'GET', `/v1/shipments/${created.id}`, { token: liveToken });
    expect(read.body).toEqual(created);
    // A destination of only a country answers its other parts null.
    const bare = await createShipment(w, liveToken, { destination: { country: 'DE' } });
    expect(bare.destination).toEqual({
      line1: null,
      city: null,
      region: null,
      postal_code: null,
      country: 'DE',
    });
  });

  it('PATCH sets, keeps and clears them, and never the status', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken, { carrier: CARRIER });
    w.clock.advance(1000);
    const patched = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      body: {
        destination: DESTINATION,
        sub_status: 'confirmed.awaiting_pickup',
        estimated_delivery: ESTIMATE,
      },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      status: 'confirmed',
      carrier: CARRIER,
      sub_status: 'confirmed.awaiting_pickup',
      destination: { country: 'FR' },
    });
    expect(patched.body.updated_at).not.toBe(shipment.updated_at);
    const cleared = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      body: { carrier: null, sub_status: null },
    });
    expect(cleared.body).toMatchObject({ carrier: null, sub_status: null, destination: { city: 'Paris' } });
    // A status is not among PATCH's fields.
    const moved = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      body: { status: 'picked_up' },
    });
    expect(moved.status).toBe(400);
    expect((await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: liveToken })).body.status).toBe(
      'confirmed',
    );
    // Proof of delivery waits for the delivery.
    const early = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      body: {
        proof_of_delivery: {
          method: 'signature',
          signed_by: 'A. Neighbour',
          received_at: '2026-12-05T10:00:00Z',
        },
      },
    });
    expect(early.status).toBe(422);
    expect(early.body).toMatchObject({
      code: 'tracking.proof_before_delivery',
      errors: [{ path: '/proof_of_delivery' }],
    });
    for (const status of ['picked_up', 'in_transit', 'out_for_delivery', 'delivered']) {
      const step = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
        token: liveToken,
        body: { status },
      });
      expect(step.status).toBe(200);
    }
    const proven = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      body: { proof_of_delivery: { method: 'photo', received_at: '2026-12-05T11:00:00+01:00' } },
    });
    expect(proven.status).toBe(200);
    expect(proven.body.proof_of_delivery).toEqual({
      method: 'photo',
      signed_by: null,
      received_at: '2026-12-05T10:00:00.000Z',
    });
  });

  it('each bad value is a 422 naming its field, and writes nothing', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken, { destination: DESTINATION });
    const before = await snapshot(liveToken, shipment.id);
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [
        { destination: { ...DESTINATION, country: 'XX' } },
        'tracking.invalid_country',
        '/destination/country',
      ],
      [
        { destination: { ...DESTINATION, country: 'UK' } },
        'tracking.invalid_country',
        '/destination/country',
      ],
      [{ sub_status: 'delivered.locker' }, 'tracking.invalid_sub_status', '/sub_status'],
      [{ sub_status: 'confirmed.teleported' }, 'tracking.invalid_sub_status', '/sub_status'],
      [
        { estimated_delivery: { ...ESTIMATE, earliest: '2026-12-07T00:00:00Z' } },
        'tracking.invalid_estimated_delivery',
        '/estimated_delivery/earliest',
      ],
    ];
    for (const [body, code, path] of cases) {
      for (const [method, url] of [
        ['PATCH', `/v1/shipments/${shipment.id}`],
        ['POST', '/v1/shipments'],
      ] as const) {
        const full = method === 'POST' ? { recipient_name: 'Ada', currency: 'EUR', ...body } : body;
        // A good field beside the bad one is not written either.
        const answer = await call(w, method, url, { token: liveToken, body: { ...full, carrier: CARRIER } });
        expect(answer.status, `${method} ${JSON.stringify(body)}`).toBe(422);
        expect(answer.body).toMatchObject({ code, errors: [{ path }] });
        expect(answer.headers['content-type']).toContain('application/problem+json');
      }
    }
    expect(await snapshot(liveToken, shipment.id)).toBe(before);
    const list = await call(w, 'GET', '/v1/shipments', { token: liveToken });
    expect(list.body.data).toHaveLength(1);
    // A carrier code of capitals is the shape's (400).
    const shape = await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      body: { carrier: { code: 'DHL', name: 'DHL' } },
    });
    expect(shape.status).toBe(400);
  });

  it('Waybill-Version: 2026-11-01 answers the shape without the tracking fields', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken, { carrier: CARRIER });
    const old = await call(w, 'GET', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      headers: { 'waybill-version': '2026-11-01' },
    });
    expect(old.status).toBe(200);
    expect(old.headers['content-type']).toContain('application/json');
    const {
      carrier,
      carrier_tracking_number,
      destination,
      sub_status,
      estimated_delivery,
      proof_of_delivery,
      latest_checkpoint,
      tracking_url,
      ...rest
    } = shipment;
    expect(old.body).toEqual(rest);
    const list = await call(w, 'GET', '/v1/shipments', {
      token: liveToken,
      headers: { 'waybill-version': '2026-11-01' },
    });
    expect(list.body.data).toEqual([rest]);
    const latest = await call(w, 'GET', `/v1/shipments/${shipment.id}`, {
      token: liveToken,
      headers: { 'waybill-version': '2026-12-01' },
    });
    expect(latest.body).toEqual(shipment);
  });
});

describe('erasure', () => {
  it('customer.redact clears the destination street line and who signed with the name, and keeps the place', async () => {
    const company = await createCompany(w);
    // A target of each version: the messages of both are what their deliveries show, send and replay.
    const receiver = await startReceiver();
    onTestFinished(() => receiver.close());
    const endpoints: Record<string, string> = {};
    for (const api_version of ['2026-11-01', '2026-12-01']) {
      const made = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { url: receiver.url, event_types: ['shipment.status_changed'], api_version },
      });
      expect(made.status, made.text).toBe(201);
      endpoints[api_version] = made.body.id;
    }
    const shipment = await createShipment(w, company.liveToken, {
      recipient_name: 'Zebulon Quarrington',
      recipient_email: 'zq@example.org',
      destination: DESTINATION,
    });
    const delivered = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
      token: company.liveToken,
      body: {
        occurred_at: w.clock.now().toISOString(),
        message: 'Delivered',
        status: 'delivered',
        proof_of_delivery: {
          method: 'signature',
          signed_by: 'Zebulon Quarrington',
          received_at: w.clock.now().toISOString(),
        },
      },
    });
    expect(delivered.status, delivered.text).toBe(201);
    const erased = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'redact', recipient: { email: 'zq@example.org' } },
    });
    expect(erased.status).toBe(201);
    const read = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(read.body.recipient_name).toBe('[redacted]');
    expect(read.body.destination).toEqual({ ...DESTINATION, line1: '[redacted]', country: 'FR' });
    expect(read.text).not.toContain('Rue de la Paix');
    expect(read.body.proof_of_delivery).toMatchObject({ method: 'signature', signed_by: '[redacted]' });
    expect(read.text).not.toContain('Quarrington');
    for (const [version, id] of Object.entries(endpoints)) {
      const deliveries = await call(w, 'GET', `/v1/webhook-endpoints/${id}/deliveries`, {
        token: company.liveToken,
      });
      expect(deliveries.body.data.length).toBeGreaterThan(0);
      for (const listed of deliveries.body.data) {
        const one = await call(w, 'GET', `/v1/webhook-deliveries/${listed.id}`, { token: company.liveToken });
        const message = JSON.parse(one.body.message.body);
        expect(message.api_version).toBe(version);
        expect(one.body.message.body).not.toContain('Quarrington');
        expect(one.body.message.body).not.toContain('Rue de la Paix');
        if (version === '2026-12-01') expect(message.data.shipment.destination.line1).toBe('[redacted]');
      }
    }
  });
});
