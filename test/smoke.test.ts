import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment } from './support/api.ts';
import { startWaybill, type TestWaybill } from './support/harness.ts';

describe('smoke', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('creates a shipment and moves it', async () => {
    const company = await createCompany(w);
    const shipment = await createShipment(w, company.liveToken);
    expect(shipment.status).toBe('confirmed');
    const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.status).toBe('picked_up');
    const events = await call(w, 'GET', '/v1/events', { token: company.liveToken });
    expect(events.body.data.map((e: { type: string }) => e.type).sort()).toEqual([
      'shipment.created',
      'shipment.status_changed',
    ]);
  });
});
