import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startReceiver, testWorker, verify } from '../delivery/support.ts';
import { call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * Filters on the envelope of the target's own version (issue 51, migration 0097): an endpoint of
 * 2026-12-01 may filter on the tracking fields only that version has, and the fan-out evaluates
 * it on that version's message; an endpoint of 2026-11-01 may not name them.
 */
let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

async function drain(): Promise<void> {
  const worker = testWorker(w);
  await worker.tick();
  await worker.stop();
}

const BY_CARRIER = { 'data.shipment.carrier.code': { eq: 'dhl' } };

describe('filters in each event version', () => {
  it("a 2026-12-01 endpoint filters on the carrier; 2026-11-01 cannot name it; each is evaluated on its own version's message", async () => {
    const company = await createCompany(w);
    const latest = await startReceiver();
    const old = await startReceiver();
    try {
      const refused = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: {
          url: old.url,
          event_types: ['shipment.status_changed'],
          api_version: '2026-11-01',
          filter: BY_CARRIER,
        },
      });
      expect(refused.status).toBe(422);
      expect(refused.body).toMatchObject({
        code: 'filter.unknown_path',
        errors: [{ path: '/filter/data.shipment.carrier.code' }],
      });

      const pinned = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { url: latest.url, event_types: ['shipment.status_changed'], filter: BY_CARRIER },
      });
      expect(pinned.status, pinned.text).toBe(201);
      expect(pinned.body).toMatchObject({ api_version: '2026-12-01', filter: BY_CARRIER });
      // A path both versions have, on an endpoint of the first.
      const oldFiltered = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: {
          url: old.url,
          event_types: ['shipment.status_changed'],
          api_version: '2026-11-01',
          filter: { 'data.shipment.status': { eq: 'picked_up' } },
        },
      });
      expect(oldFiltered.status, oldFiltered.text).toBe(201);

      // Back to 2026-11-01 with the carrier filter: refused, the endpoint as it was.
      const back = await call(w, 'PATCH', `/v1/webhook-endpoints/${pinned.body.id}`, {
        token: company.liveToken,
        body: { api_version: '2026-11-01' },
      });
      expect(back.status).toBe(422);
      expect(back.body.code).toBe('filter.unknown_path');
      const unchanged = await call(w, 'GET', `/v1/webhook-endpoints/${pinned.body.id}`, {
        token: company.liveToken,
      });
      expect(unchanged.body).toMatchObject({ api_version: '2026-12-01', filter: BY_CARRIER });

      const dhl = await createShipment(w, company.liveToken, { carrier: { code: 'dhl', name: 'DHL' } });
      const ups = await createShipment(w, company.liveToken, { carrier: { code: 'ups', name: 'UPS' } });
      const none = await createShipment(w, company.liveToken);
      for (const shipment of [dhl, ups, none]) {
        const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
          token: company.liveToken,
          body: { status: 'picked_up' },
        });
        expect(moved.status, moved.text).toBe(200);
      }
      await drain();

      const latestMessages = latest.received.map((m) => verify(m, pinned.body.secret, w.clock.now()) as Json);
      expect(latestMessages.map((m) => [m.type, m.api_version, m.data.shipment.id])).toEqual([
        ['shipment.status_changed', '2026-12-01', dhl.id],
      ]);
      expect(latestMessages[0].data.shipment.carrier).toEqual({ code: 'dhl', name: 'DHL' });
      const oldMessages = old.received.map((m) => verify(m, oldFiltered.body.secret, w.clock.now()) as Json);
      expect(oldMessages.map((m) => [m.api_version, m.data.shipment.id]).sort()).toEqual(
        [dhl.id, ups.id, none.id].map((id) => ['2026-11-01', id]).sort(),
      );
      for (const message of oldMessages) expect(message.data.shipment).not.toHaveProperty('carrier');

      // A 2026-11-01 endpoint moved to the latest version may then take the carrier filter.
      const moved = await call(w, 'PATCH', `/v1/webhook-endpoints/${oldFiltered.body.id}`, {
        token: company.liveToken,
        body: { api_version: '2026-12-01', filter: BY_CARRIER },
      });
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body).toMatchObject({ api_version: '2026-12-01', filter: BY_CARRIER });
    } finally {
      await latest.close();
      await old.close();
    }
  });
});
