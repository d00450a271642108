import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findShipmentByNumber } from '../../src/modules/tracking/checkpoints.ts';
import { call, createApiToken, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

function add(token: string, id: string, body: Record<string, unknown>) {
  return call(w, 'POST', `/v1/shipments/${id}/checkpoints`, {
    token,
    body: { message: 'Scanned', ...body },
  });
}

/** Events of one moment (a move's status_changed and delivered) in the order the move sends them. */
const RANK: Record<string, number> = { 'shipment.created': 0, 'shipment.status_changed': 1 };
function byTimeThenType(a: Json, b: Json): number {
  return a.created_at.localeCompare(b.created_at) || (RANK[a.type] ?? 2) - (RANK[b.type] ?? 2);
}

/** The shipment's status events, oldest first: [type, previous_status, status]. */
async function eventsOf(token: string, id: string): Promise<Array<[string, string | null, string]>> {
  const page = await call(w, 'GET', `/v1/events?shipment_id=${id}&limit=100`, { token });
  return page.body.data
    .map((e: Json) => JSON.parse(e.payload))
    .filter((e: Json) => e.api_version === '2026-11-01')
    .sort(byTimeThenType)
    .map((e: Json) => [e.type, e.data.previous_status, e.data.status]);
}

async function timeline(token: string, id: string, query = ''): Promise<Json> {
  const page = await call(w, 'GET', `/v1/shipments/${id}/checkpoints${query}`, { token });
  expect(page.status).toBe(200);
  return page.body;
}

describe('checkpoints', () => {
  it('one in order moves the shipment, and is its latest checkpoint', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken);
    w.clock.advance(1000);
    const added = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T09:15:00+01:00',
      status: 'picked_up',
      sub_status: 'picked_up.from_sender',
      location: { city: 'Lyon', country: 'fr', lat: 45.76, lng: 4.83 },
      external_id: 'scan-1',
      estimated_delivery: {
        earliest: '2026-12-04T08:00:00Z',
        latest: '2026-12-04T18:00:00Z',
        source: 'carrier',
      },
    });
    expect(added.status).toBe(201);
    expect(added.body.applied).toBe(true);
    expect(added.body.checkpoint).toEqual({
      id: expect.stringMatching(/^chk_/),
      shipment_id: shipment.id,
      occurred_at: '2026-12-02T08:15:00.000Z',
      location: { city: 'Lyon', region: null, postal_code: null, country: 'FR', lat: 45.76, lng: 4.83 },
      message: 'Scanned',
      status: 'picked_up',
      sub_status: 'picked_up.from_sender',
      estimated_delivery: {
        earliest: '2026-12-04T08:00:00.000Z',
        latest: '2026-12-04T18:00:00.000Z',
        source: 'carrier',
      },
      source: 'api',
      external_id: 'scan-1',
      applied: true,
      created_at: w.clock.now().toISOString(),
    });
    expect(added.body.shipment).toMatchObject({
      status: 'picked_up',
      sub_status: 'picked_up.from_sender',
      estimated_delivery: added.body.checkpoint.estimated_delivery,
      latest_checkpoint: added.body.checkpoint,
    });
    const read = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: liveToken });
    expect({ ...read.body, tracking_url: undefined }).toEqual(added.body.shipment);
    expect(await eventsOf(liveToken, shipment.id)).toEqual([
      ['shipment.created', null, 'confirmed'],
      ['shipment.status_changed', 'confirmed', 'picked_up'],
    ]);
    // One without a status keeps the status and becomes the latest.
    const note = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T10:00:00Z',
      message: 'At the depot',
    });
    expect(note.body).toMatchObject({ applied: true, shipment: { status: 'picked_up' } });
    expect(note.body.shipment.latest_checkpoint.id).toBe(note.body.checkpoint.id);
  });

  it('a skip moves through the statuses between, each with its events, in order, in one go', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken);
    const delivered = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T12:00:00Z',
      status: 'delivered',
      sub_status: 'delivered.locker',
      proof_of_delivery: { method: 'pin', received_at: '2026-12-02T12:00:00Z' },
    });
    expect(delivered.status).toBe(201);
    expect(delivered.body.shipment).toMatchObject({
      status: 'delivered',
      sub_status: 'delivered.locker',
      proof_of_delivery: { method: 'pin', signed_by: null, received_at: '2026-12-02T12:00:00.000Z' },
    });
    expect(await eventsOf(liveToken, shipment.id)).toEqual([
      ['shipment.created', null, 'confirmed'],
      ['shipment.status_changed', 'confirmed', 'picked_up'],
      ['shipment.status_changed', 'picked_up', 'in_transit'],
      ['shipment.status_changed', 'in_transit', 'out_for_delivery'],
      ['shipment.status_changed', 'out_for_delivery', 'delivered'],
      ['shipment.delivered', 'out_for_delivery', 'delivered'],
    ]);
    // Each message's shipment is the shipment at that step, and updated_at orders them.
    const page = await call(w, 'GET', `/v1/events?shipment_id=${shipment.id}&limit=100`, {
      token: liveToken,
    });
    const shipments = page.body.data
      .map((e: Json) => JSON.parse(e.payload))
      .filter((e: Json) => e.api_version === '2026-11-01')
      .sort(byTimeThenType)
      .map((e: Json) => e.data.shipment);
    expect(shipments.map((s: Json) => s.status)).toEqual([
      'confirmed',
      'picked_up',
      'in_transit',
      'out_for_delivery',
      'delivered',
      'delivered',
    ]);
    const times = shipments.slice(1, 5).map((s: Json) => s.updated_at);
    expect([...times].sort()).toEqual(times);
    expect(new Set(times).size).toBe(4);
  });

  it('an older one and a backward one are kept with applied false and move nothing', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken);
    const first = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T12:00:00Z',
      status: 'in_transit',
    });
    const after = first.body.shipment;
    const older = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T11:00:00Z',
      status: 'out_for_delivery',
      message: 'Late scan',
    });
    expect(older.status).toBe(201);
    expect(older.body.applied).toBe(false);
    expect(older.body.checkpoint.applied).toBe(false);
    expect(older.body.shipment).toEqual(after);
    const backward = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T13:00:00Z',
      status: 'picked_up',
    });
    expect(backward.body.applied).toBe(false);
    expect(backward.body.shipment).toEqual(after);
    // out_for_delivery -> in_transit is backward too (only an exception leads back).
    const ahead = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T14:00:00Z',
      status: 'out_for_delivery',
    });
    expect(ahead.body.applied).toBe(true);
    const back = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T15:00:00Z',
      status: 'in_transit',
    });
    expect(back.body.applied).toBe(false);
    expect(back.body.shipment.status).toBe('out_for_delivery');
    // An exception, then back on the way: both forward.
    const problem = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T16:00:00Z',
      status: 'exception',
      sub_status: 'exception.address_issue',
    });
    expect(problem.body.shipment).toMatchObject({
      status: 'exception',
      exception_reason: 'held',
      sub_status: 'exception.address_issue',
    });
    const resumed = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T17:00:00Z',
      status: 'delivered',
    });
    expect(resumed.body.shipment.status).toBe('delivered');
    expect((await eventsOf(liveToken, shipment.id)).map((e) => e.slice(1).join('>'))).toEqual([
      '>confirmed',
      'confirmed>picked_up',
      'picked_up>in_transit',
      'in_transit>out_for_delivery',
      'out_for_delivery>exception',
      'out_for_delivery>exception',
      'exception>out_for_delivery',
      'out_for_delivery>delivered',
      'out_for_delivery>delivered',
    ]);
    // The timeline keeps every one, newest occurred_at first, applied or not.
    const all = await timeline(liveToken, shipment.id, '?limit=100');
    expect(all.data.map((c: Json) => [c.occurred_at.slice(11, 13), c.applied])).toEqual([
      ['17', true],
      ['16', true],
      ['15', false],
      ['14', true],
      ['13', false],
      ['12', true],
      ['11', false],
    ]);
  });

  it('the same external_id again answers 200 with the first, and nothing new happens', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken);
    const first = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T12:00:00Z',
      status: 'picked_up',
      external_id: 'ext-7',
    });
    const events = await eventsOf(liveToken, shipment.id);
    w.clock.advance(5000);
    const again = await add(liveToken, shipment.id, {
      occurred_at: '2026-12-02T13:00:00Z',
      status: 'in_transit',
      external_id: 'ext-7',
      message: 'Another text',
    });
    expect(again.status).toBe(200);
    expect(again.body.checkpoint).toEqual(first.body.checkpoint);
    expect(again.body.shipment).toEqual(first.body.shipment);
    expect(await eventsOf(liveToken, shipment.id)).toEqual(events);
    expect((await timeline(liveToken, shipment.id)).data).toHaveLength(1);
    // Another shipment may use the same external id.
    const other = await createShipment(w, liveToken);
    expect(
      (await add(liveToken, other.id, { occurred_at: '2026-12-02T12:00:00Z', external_id: 'ext-7' })).status,
    ).toBe(201);
  });

  it('bad input is a 422 or 400 naming the field, and writes nothing', async () => {
    const { liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken);
    const before = JSON.stringify([
      (await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: liveToken })).body,
      await eventsOf(liveToken, shipment.id),
    ]);
    const at = '2026-12-02T12:00:00Z';
    const cases: Array<[Record<string, unknown>, number, string, string]> = [
      [{ occurred_at: at, message: 'x'.repeat(501) }, 422, 'tracking.invalid_message', '/message'],
      [
        { occurred_at: at, location: { country: 'QQ' } },
        422,
        'tracking.invalid_country',
        '/location/country',
      ],
      [
        { occurred_at: at, status: 'in_transit', sub_status: 'delivered.neighbour' },
        422,
        'tracking.invalid_sub_status',
        '/sub_status',
      ],
      // Without a status, the sub-status is the shipment's status's.
      [
        { occurred_at: at, sub_status: 'in_transit.customs' },
        422,
        'tracking.invalid_sub_status',
        '/sub_status',
      ],
      [
        {
          occurred_at: at,
          status: 'picked_up',
          estimated_delivery: {
            earliest: '2026-12-05T00:00:00Z',
            latest: '2026-12-04T00:00:00Z',
            source: 'company',
          },
        },
        422,
        'tracking.invalid_estimated_delivery',
        '/estimated_delivery/earliest',
      ],
      [
        { occurred_at: at, status: 'picked_up', proof_of_delivery: { method: 'none', received_at: at } },
        422,
        'tracking.proof_before_delivery',
        '/proof_of_delivery',
      ],
      [{ occurred_at: '2026-12-02 12:00', message: 'x' }, 400, 'validation.failed', '/occurred_at'],
      [{ occurred_at: at, status: 'teleported' }, 400, 'validation.failed', '/status'],
    ];
    for (const [body, status, code, path] of cases) {
      const answer = await add(liveToken, shipment.id, { ...body, external_id: 'never' });
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.code).toBe(code);
      expect(answer.body.errors.map((e: Json) => e.path)).toContain(path);
    }
    const after = JSON.stringify([
      (await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: liveToken })).body,
      await eventsOf(liveToken, shipment.id),
    ]);
    expect(after).toBe(before);
    expect((await timeline(liveToken, shipment.id)).data).toEqual([]);
    // Exactly 500 characters are fine (counted as characters, not bytes).
    const full = await add(liveToken, shipment.id, { occurred_at: at, message: 'é'.repeat(500) });
    expect(full.status).toBe(201);
  });

  it('the timeline pages newest first with limit and cursor, and needs the scopes', async () => {
    const { liveToken, testToken, owner, tenantId } = await createCompany(w);
    const shipment = await createShipment(w, liveToken);
    for (let hour = 10; hour < 15; hour++)
      await add(liveToken, shipment.id, { occurred_at: `2026-12-02T${hour}:00:00Z`, message: `h${hour}` });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = await timeline(
        liveToken,
        shipment.id,
        `?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((c: Json) => c.message));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['h14', 'h13', 'h12', 'h11', 'h10']);
    const reader = await createApiToken(w, owner, tenantId, { mode: 'live', scopes: ['shipments:read'] });
    expect((await call(w, 'GET', `/v1/shipments/${shipment.id}/checkpoints`, { token: reader })).status).toBe(
      200,
    );
    const denied = await add(reader, shipment.id, { occurred_at: '2026-12-02T16:00:00Z' });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('auth.insufficient_scope');
    // A test token does not see a live shipment; another company neither.
    expect((await add(testToken, shipment.id, { occurred_at: '2026-12-02T16:00:00Z' })).status).toBe(404);
    expect(
      (await call(w, 'GET', `/v1/shipments/${shipment.id}/checkpoints`, { token: testToken })).status,
    ).toBe(404);
    const stranger = await createCompany(w);
    expect((await add(stranger.liveToken, shipment.id, { occurred_at: '2026-12-02T16:00:00Z' })).status).toBe(
      404,
    );
    expect((await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, { body: {} })).status).toBe(
      401,
    );
  });

  it('a merchant token adds only to its own account’s shipments', async () => {
    const { liveToken, owner, tenantId } = await createCompany(w);
    const account = await call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, {
      token: owner.token,
      body: { name: 'Shop' },
    });
    expect(account.status).toBe(201);
    const merchant = await createApiToken(w, owner, tenantId, {
      mode: 'live',
      customer_account_id: account.body.id,
    });
    const own = await createShipment(w, merchant);
    const companys = await createShipment(w, liveToken);
    expect((await add(merchant, own.id, { occurred_at: '2026-12-02T12:00:00Z' })).status).toBe(201);
    expect((await add(merchant, companys.id, { occurred_at: '2026-12-02T12:00:00Z' })).status).toBe(404);
  });
});

describe('findShipmentByNumber (for the inbound sources)', () => {
  it('finds by either number within the company, mode and account only', async () => {
    const a = await createCompany(w);
    const b = await createCompany(w);
    const shipment = await createShipment(w, a.liveToken, { carrier_tracking_number: '1Z999AA10123456784' });
    const test = await createShipment(w, a.testToken, { carrier_tracking_number: 'TESTNUMBER1' });
    const find = (tenantId: string, mode: 'live' | 'test', number: string, customerAccountId?: string) =>
      findShipmentByNumber(w.ctx, { tenantId, mode, number, customerAccountId: customerAccountId ?? null });
    expect(await find(a.tenantId, 'live', shipment.tracking_number)).toEqual({
      id: shipment.id,
      customerAccountId: null,
    });
    expect(await find(a.tenantId, 'live', '1Z999AA10123456784')).toEqual({
      id: shipment.id,
      customerAccountId: null,
    });
    expect(await find(a.tenantId, 'test', '1Z999AA10123456784')).toBeNull();
    expect(await find(a.tenantId, 'test', 'TESTNUMBER1')).toEqual({ id: test.id, customerAccountId: null });
    expect(await find(b.tenantId, 'live', '1Z999AA10123456784')).toBeNull();
    expect(await find(a.tenantId, 'live', '1Z999AA10123456784', 'acct_someoneelse')).toBeNull();
  });
});
