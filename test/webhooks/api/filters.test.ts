import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deliveriesOf, testWorker } from '../../delivery/support.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { createEndpoint, type Receiver, startReceiver, verify } from './support.ts';

let w: TestWaybill;
let company: CompanyFixture;
let receiver: Receiver;

beforeAll(async () => {
  w = await startWaybill();
  company = await createCompany(w, 'Filtering Company');
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

const STATUS_FILTER = { 'data.shipment.status': { in: ['delivered', 'exception'] } };

async function move(shipmentId: string, ...statuses: string[]) {
  for (const status of statuses) {
    const moved = await call(w, 'POST', `/v1/shipments/${shipmentId}/status`, {
      token: company.liveToken,
      body: { status, ...(status === 'exception' ? { exception_reason: 'held' } : {}) },
    });
    expect(moved.status, moved.text).toBe(200);
  }
}

const typesOf = async (endpointId: string) => (await deliveriesOf(w, endpointId)).map((d) => d.event_type);

describe('endpoint filters', () => {
  it('a filtered-out event makes no delivery; the matching one arrives, signed', async () => {
    const filtered = await createEndpoint(w, company.liveToken, {
      url: receiver.url,
      event_types: ['shipment.status_changed'],
      filter: STATUS_FILTER,
    });
    expect(filtered.filter).toEqual(STATUS_FILTER);
    const plain = await createEndpoint(w, company.liveToken, {
      url: 'http://127.0.0.1:9/nothing-listens',
      event_types: ['shipment.status_changed'],
    });
    expect(plain.filter).toBeNull();
    const shipment = await createShipment(w, company.liveToken);
    await move(shipment.id, 'picked_up', 'in_transit', 'out_for_delivery', 'delivered');

    expect(await typesOf(plain.id)).toHaveLength(4);
    const rows = await deliveriesOf(w, filtered.id);
    expect(rows).toHaveLength(1);

    const worker = testWorker(w);
    try {
      while ((await worker.tick()) > 0) {}
    } finally {
      await worker.stop();
    }
    const mine = receiver.received.filter((m) => m.headers['webhook-id'] === rows[0]?.event_id);
    expect(mine).toHaveLength(1);
    const message = verify(filtered.secret, mine[0] as never, w.clock.now());
    expect(message).toMatchObject({
      type: 'shipment.status_changed',
      data: { status: 'delivered', previous_status: 'out_for_delivery', shipment: { id: shipment.id } },
    });
  });

  it('any, not, numbers, prefixes and timestamps decide in the fan-out', async () => {
    const since = w.clock.now().toISOString();
    const endpoint = await createEndpoint(w, company.liveToken, {
      url: receiver.url,
      event_types: ['shipment.created'],
      filter: {
        any: [
          { 'data.shipment.external_ref': { prefix: 'VIP-' } },
          { 'data.shipment.parcels.weight_grams': { gt: 5000 } },
        ],
        not: { 'data.shipment.recipient_name': { eq: 'Blocked Person' } },
        created_at: { gte: since },
      },
    });
    const parcels = (grams: number) => [{ weight_grams: grams }];
    await createShipment(w, company.liveToken, { external_ref: 'VIP-1', parcels: parcels(100) });
    await createShipment(w, company.liveToken, { external_ref: 'ORD-2', parcels: parcels(9000) });
    await createShipment(w, company.liveToken, { external_ref: 'ORD-3', parcels: parcels(100) });
    await createShipment(w, company.liveToken, {
      external_ref: 'VIP-4',
      recipient_name: 'Blocked Person',
      parcels: parcels(100),
    });
    await createShipment(w, company.liveToken, { external_ref: null, parcels: parcels(6000) });
    const events = await w.ctx.db
      .selectFrom('events')
      .select(['id', 'payload'])
      .where(
        'id',
        'in',
        (await deliveriesOf(w, endpoint.id)).map((d) => d.event_id),
      )
      .execute();
    const refs = events.map((e) => JSON.parse(e.payload).data.shipment.external_ref).sort();
    expect(refs).toEqual(['ORD-2', 'VIP-1', null].sort());
  });

  it('PATCH sets and removes a filter; new types must have its paths', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, {
      url: receiver.url,
      event_types: ['shipment.status_changed'],
    });
    const patch = (body: unknown) =>
      call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, { token: company.liveToken, body });
    const set = await patch({ filter: { 'data.status': { eq: 'exception' } } });
    expect(set.status).toBe(200);
    expect(set.body.filter).toEqual({ 'data.status': { eq: 'exception' } });
    const shipment = await createShipment(w, company.liveToken);
    await move(shipment.id, 'picked_up', 'exception');
    expect(await typesOf(endpoint.id)).toEqual(['shipment.status_changed']);

    // webhook_endpoint.failing has no data.status: the kept filter does not fit the new types.
    const refused = await patch({ event_types: ['webhook_endpoint.failing'] });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('filter.unknown_path');
    expect(refused.body.errors[0].path).toBe('/filter/data.status');

    const removed = await patch({ filter: null });
    expect(removed.body.filter).toBeNull();
    await move(shipment.id, 'in_transit');
    expect(await typesOf(endpoint.id)).toHaveLength(2);
  });

  it('bad filters get a clear error with the path, and nothing is stored', async () => {
    const before = await call(w, 'GET', '/v1/webhook-endpoints?limit=100', { token: company.liveToken });
    const many = {
      any: Array.from({ length: 21 }, (_, i) => ({ 'data.shipment.parcels.weight_grams': { gt: i } })),
    };
    let deep: Json = { 'data.shipment.status': { eq: 'delivered' } };
    for (let i = 0; i < 6; i += 1) deep = { not: deep };
    const cases: Array<[unknown, string, string]> = [
      [{ 'data.shipment.colour': { eq: 'red' } }, 'filter.unknown_path', '/filter/data.shipment.colour'],
      [{ 'data.shipment.status': { eq: 5 } }, 'validation.failed', '/filter/data.shipment.status/eq'],
      [{ 'data.shipment.status': { gt: 'a' } }, 'validation.failed', '/filter/data.shipment.status/gt'],
      [
        { 'data.shipment.parcels.weight_grams': { prefix: '1' } },
        'validation.failed',
        '/filter/data.shipment.parcels.weight_grams/prefix',
      ],
      [{ created_at: { lt: 'yesterday' } }, 'validation.failed', '/filter/created_at/lt'],
      [{ 'data.shipment.status': { like: 'x' } }, 'validation.failed', '/filter/data.shipment.status/like'],
      [{ 'data.shipment.status': { in: [] } }, 'validation.failed', '/filter/data.shipment.status/in'],
      [
        { 'data.shipment.status': { exists: 'yes' } },
        'validation.failed',
        '/filter/data.shipment.status/exists',
      ],
      [{ 'data..status': { eq: 'x' } }, 'validation.failed', '/filter/data..status'],
      [{ any: [] }, 'validation.failed', '/filter/any'],
      [many, 'validation.failed', '/filter'],
      [deep, 'validation.failed', '/filter/not/not/not/not/not'],
    ];
    for (const [filter, code, path] of cases) {
      const refused = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { url: receiver.url, event_types: ['shipment.created'], filter },
      });
      expect(refused.status, JSON.stringify(filter)).toBe(422);
      expect(refused.body.code).toBe(code);
      expect(refused.body.errors.map((e: Json) => e.path)).toContain(path);
    }
    const twentyOne = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'], filter: many },
    });
    expect(twentyOne.body.errors[0].message).toMatch(/21 conditions: at most 20/);
    const after = await call(w, 'GET', '/v1/webhook-endpoints?limit=100', { token: company.liveToken });
    expect(after.body.data).toHaveLength(before.body.data.length);
  });
});
