import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECOND } from '../../src/lib/clock.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/** The contract's state machine, written out here independently of the code under test. */
const MOVES: Record<string, string[]> = {
  draft: ['confirmed', 'cancelled'],
  confirmed: ['picked_up', 'cancelled'],
  picked_up: ['in_transit', 'exception'],
  in_transit: ['out_for_delivery', 'exception'],
  out_for_delivery: ['delivered', 'exception'],
  exception: ['in_transit', 'out_for_delivery', 'returned'],
  delivered: [],
  returned: [],
  cancelled: [],
};
const STATUSES = Object.keys(MOVES);
/** How to reach each status from a new shipment (created draft or confirmed). */
const PATHS: Record<string, string[]> = {
  draft: [],
  confirmed: [],
  cancelled: ['cancelled'],
  picked_up: ['picked_up'],
  in_transit: ['picked_up', 'in_transit'],
  out_for_delivery: ['picked_up', 'in_transit', 'out_for_delivery'],
  delivered: ['picked_up', 'in_transit', 'out_for_delivery', 'delivered'],
  exception: ['picked_up', 'exception'],
  returned: ['picked_up', 'exception', 'returned'],
};

let w: TestWaybill;
let company: CompanyFixture;

beforeAll(async () => {
  w = await startWaybill();
  company = await createCompany(w);
});
afterAll(async () => {
  await w?.close();
});

const move = (id: string, body: Record<string, unknown>) =>
  call(w, 'POST', `/v1/shipments/${id}/status`, { token: company.liveToken, body });
const read = async (id: string) =>
  (await call(w, 'GET', `/v1/shipments/${id}`, { token: company.liveToken })).body;

/** The shipment in 2026-11-01's shape, as the events' stored envelopes (that version's) carry it. */
const readFirstVersion = async (id: string) =>
  (
    await call(w, 'GET', `/v1/shipments/${id}`, {
      token: company.liveToken,
      headers: { 'waybill-version': '2026-11-01' },
    })
  ).body;

/** The envelopes of a shipment's events, parsed, oldest first. */
async function eventsOf(id: string): Promise<Json[]> {
  const page = await call(w, 'GET', `/v1/events?limit=100&shipment_id=${id}`, { token: company.liveToken });
  expect(page.status).toBe(200);
  return page.body.data.map((e: { payload: string }) => JSON.parse(e.payload)).reverse();
}

async function shipmentIn(status: string): Promise<Json> {
  const shipment = await createShipment(w, company.liveToken, {
    status: status === 'draft' ? 'draft' : 'confirmed',
  });
  for (const step of PATHS[status] ?? [])
    expect((await move(shipment.id, { status: step })).status).toBe(200);
  return read(shipment.id);
}

function expectEnvelope(event: Json, type: string, livemode = true) {
  expect(event).toEqual({
    id: expect.stringMatching(/^evt_[0-9A-Za-z]+$/),
    type,
    api_version: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    tenant_id: company.tenantId,
    livemode,
    data: expect.any(Object),
  });
  expect(Object.keys(event.data).sort()).toEqual(['previous_status', 'shipment', 'status']);
}

describe('the state machine', () => {
  it('allows every move of the contract, each with its events', async () => {
    for (const from of STATUSES) {
      for (const to of MOVES[from] ?? []) {
        const shipment = await shipmentIn(from);
        const before = await eventsOf(shipment.id);
        w.clock.advance(SECOND);
        const moved = await move(shipment.id, { status: to });
        expect(moved.status, `${from} -> ${to}`).toBe(200);
        expect(moved.body.status).toBe(to);
        expect(moved.body.updated_at).toBe(w.clock.now().toISOString());
        expect(moved.body).toEqual(await read(shipment.id));
        const now = await readFirstVersion(shipment.id);

        const added = (await eventsOf(shipment.id)).slice(before.length);
        const expected = ['shipment.status_changed'];
        if (to === 'delivered') expected.push('shipment.delivered');
        if (to === 'exception') expected.push('shipment.exception');
        expect(added.map((e) => e.type).sort()).toEqual(expected.sort());
        for (const event of added) {
          expectEnvelope(event, event.type);
          expect(event.created_at).toBe(now.updated_at);
          expect(event.data).toEqual({ status: to, previous_status: from, shipment: withoutUrl(now) });
        }
      }
    }
  });

  it('refuses every other move with 409 shipment.invalid_transition and changes nothing', async () => {
    for (const from of STATUSES) {
      const shipment = await shipmentIn(from);
      const events = await eventsOf(shipment.id);
      for (const to of STATUSES.filter((s) => !(MOVES[from] ?? []).includes(s))) {
        const refused = await move(shipment.id, { status: to });
        expect(refused.status, `${from} -> ${to}`).toBe(409);
        expect(refused.body.code).toBe('shipment.invalid_transition');
        expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
      }
      expect(await read(shipment.id)).toEqual(shipment);
      expect(await eventsOf(shipment.id)).toEqual(events);
    }
  });

  it('an exception carries its reason, and the reason goes with the exception only', async () => {
    const shipment = await shipmentIn('in_transit');
    const wrongPlace = await move(shipment.id, { status: 'out_for_delivery', exception_reason: 'lost' });
    expect(wrongPlace.status).toBe(400);
    expect(wrongPlace.body.code).toBe('validation.failed');
    const unknown = await move(shipment.id, { status: 'exception', exception_reason: 'stolen' });
    expect(unknown.status).toBe(400);
    const unknownStatus = await move(shipment.id, { status: 'teleported' });
    expect(unknownStatus.status).toBe(400);
    expect(unknownStatus.body.code).toBe('validation.failed');
    expect(await read(shipment.id)).toEqual(shipment);

    const lost = await move(shipment.id, { status: 'exception', exception_reason: 'damaged' });
    expect(lost.body).toMatchObject({ status: 'exception', exception_reason: 'damaged' });
    const exceptionEvents = (await eventsOf(shipment.id)).filter((e) => e.type === 'shipment.exception');
    expect(exceptionEvents.map((e) => e.data.shipment.exception_reason)).toEqual(['damaged']);
    const resumed = await move(shipment.id, { status: 'in_transit' });
    expect(resumed.body).toMatchObject({ status: 'in_transit', exception_reason: null });
  });
});

/** A message's data.shipment is the REST answer without its tracking_url (issue 52). */
function withoutUrl(shipment: Json): Json {
  const { tracking_url: _url, ...rest } = shipment;
  return rest;
}

describe('events', () => {
  it('shipment.created carries the new shipment with no previous status', async () => {
    for (const status of ['draft', 'confirmed']) {
      const shipment = await createShipment(w, company.liveToken, { status, external_ref: `E-${status}` });
      const events = await eventsOf(shipment.id);
      expect(events).toHaveLength(1);
      expectEnvelope(events[0], 'shipment.created');
      expect(events[0].created_at).toBe(shipment.created_at);
      expect(events[0].data).toEqual({
        status,
        previous_status: null,
        shipment: await readFirstVersion(shipment.id),
      });
    }
    const test = await createShipment(w, company.testToken);
    const testEvents = (
      await call(w, 'GET', `/v1/events?shipment_id=${test.id}`, { token: company.testToken })
    ).body.data.map((e: { payload: string }) => JSON.parse(e.payload));
    expect(testEvents).toHaveLength(1);
    expectEnvelope(testEvents[0], 'shipment.created', false);
    expect(testEvents[0].data.shipment.livemode).toBe(false);
    // A live token does not see a test shipment's events.
    expect(await eventsOf(test.id)).toEqual([]);
  });

  it('a change and its events commit together: when writing an event fails, nothing changes', async () => {
    const shipment = await shipmentIn('confirmed');
    const events = await eventsOf(shipment.id);
    const failing = async () => {
      throw new Error('sink down');
    };
    w.ctx.eventSinks.push(failing);
    try {
      w.clock.advance(SECOND);
      const moved = await move(shipment.id, { status: 'picked_up' });
      expect(moved.status).toBe(500);
      expect(moved.body.code).toBe('internal');
      expect(moved.text).not.toContain('sink down');
      const created = await call(w, 'POST', '/v1/shipments', {
        token: company.liveToken,
        body: { recipient_name: 'Never', currency: 'EUR', external_ref: 'never-made' },
      });
      expect(created.status).toBe(500);
    } finally {
      w.ctx.eventSinks.splice(w.ctx.eventSinks.indexOf(failing), 1);
    }
    expect(await read(shipment.id)).toEqual(shipment);
    expect(await eventsOf(shipment.id)).toEqual(events);
    const never = await w.ctx.db
      .selectFrom('shipments')
      .select('id')
      .where('external_ref', '=', 'never-made')
      .execute();
    expect(never).toEqual([]);
  });
});
