import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idTime, newId } from '../../src/lib/ids.ts';
import { call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { deliveriesOf, insertEndpoint } from './support.ts';

describe('fan-out', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('scopes deliveries by company, merchant, livemode, enabled and subscribed types', async () => {
    const company = await createCompany(w);
    const other = await createCompany(w, 'Other');
    const account = await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
      token: company.owner.token,
      body: { name: 'Merchant' },
    });
    expect(account.status).toBe(201);
    const merchantId: string = account.body.id;
    const url = 'http://127.0.0.1:9/hook';
    const tenantId = company.tenantId;
    const live = await insertEndpoint(w, { tenantId, url });
    const merchant = await insertEndpoint(w, { tenantId, url, customerAccountId: merchantId });
    const test = await insertEndpoint(w, { tenantId, url, livemode: false });
    const disabled = await insertEndpoint(w, { tenantId, url, enabled: false });
    const deliveredOnly = await insertEndpoint(w, { tenantId, url, eventTypes: ['shipment.delivered'] });
    const foreign = await insertEndpoint(w, { tenantId: other.tenantId, url });

    const own = await createShipment(w, company.liveToken, { customer_account_id: merchantId });
    await createShipment(w, company.liveToken);
    await createShipment(w, company.testToken);
    await call(w, 'POST', `/v1/shipments/${own.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });

    const count = async (id: string) => (await deliveriesOf(w, id)).length;
    expect(await count(live.id)).toBe(3);
    expect(await count(merchant.id)).toBe(2);
    expect(await count(test.id)).toBe(1);
    expect(await count(disabled.id)).toBe(0);
    expect(await count(deliveredOnly.id)).toBe(0);
    expect(await count(foreign.id)).toBe(0);

    const events = await w.ctx.db
      .selectFrom('events')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .execute();
    for (const delivery of await deliveriesOf(w, merchant.id)) {
      const event = events.find((e) => e.id === delivery.event_id);
      // Kept once, with the event: the delivery sends the event's (migration 0016).
      expect(delivery.payload).toBeNull();
      const detail = await call(w, 'GET', `/v1/webhook-deliveries/${delivery.id}`, {
        token: company.liveToken,
      });
      expect(detail.status).toBe(200);
      expect(detail.body.message.body).toBe(event?.payload);
      expect(delivery.event_type).toBe(event?.type);
      expect(event?.customer_account_id).toBe(merchantId);
      expect(delivery.status).toBe('pending');
      expect(delivery.id).toMatch(/^dlv_[0-9A-Za-z]{22}$/);
    }
  });

  it('gives deliveries ids that sort by creation time, as every id made in the process does', async () => {
    // The database's encoding of a time (migration 0018) is the process's, character for character.
    for (const ms of [
      0,
      1,
      61,
      62,
      3843,
      Date.UTC(2026, 10, 25, 12, 0, 0, 123),
      Date.UTC(2099, 11, 31, 23, 59, 59, 999),
    ]) {
      const { rows } = await sql<{ stamp: string }>`SELECT waybill_id_time(${new Date(ms)}) AS stamp`.execute(
        w.ctx.db,
      );
      expect(rows[0]?.stamp).toBe(idTime(ms));
    }
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: 'http://127.0.0.1:9/hook' });
    const before = newId('dlv');
    await createShipment(w, company.liveToken);
    const [delivery] = await deliveriesOf(w, endpoint.id);
    const after = idTime(Date.now() + 1);
    expect(delivery?.id).toMatch(/^dlv_[0-9A-Za-z]{22}$/);
    // Made between the two: not before `before`'s millisecond, not after now.
    const made = delivery?.id.slice(4, 12) ?? '';
    expect(made >= before.slice(4, 12)).toBe(true);
    expect(made <= after).toBe(true);
  });
});
