import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue } from '../../src/delivery/claim.ts';
import { warmDeliveryStatements } from '../../src/delivery/warm-up.ts';
import { createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { insertEndpoint, queueOf } from './support.ts';

let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

describe('the warm-up at start (issue 34 item 4)', () => {
  it('claims, leases and writes nothing: what is due stays due for the worker', async () => {
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, {
      tenantId: company.tenantId,
      url: 'http://127.0.0.1:9/hook',
      eventTypes: ['shipment.created'],
    });
    for (let i = 0; i < 3; i++) await createShipment(w, company.liveToken, { external_ref: `warm-${i}` });
    const before = await queueOf(w, endpoint.id);
    const deliveries = await w.ctx.db.selectFrom('webhook_deliveries').selectAll().execute();
    expect(before).toHaveLength(3);

    await warmDeliveryStatements(w.ctx);

    expect(await queueOf(w, endpoint.id)).toEqual(before);
    expect(await w.ctx.db.selectFrom('webhook_deliveries').selectAll().execute()).toEqual(deliveries);
    const now = w.clock.now();
    // The claim the worker makes on this database (on Citus, company by company).
    const claimed = await claimDue(
      w.ctx.db,
      {
        workerId: 'wrk_test',
        now,
        leaseUntil: new Date(now.getTime() + 60_000),
        limit: 100,
        perEndpoint: 8,
        room: new Map(),
        after: '',
      },
      w.ctx.database.distributed,
    );
    expect(claimed.rows.map((row) => row.endpoint_id)).toEqual([endpoint.id, endpoint.id, endpoint.id]);
  });
});
