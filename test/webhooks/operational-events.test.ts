import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, HOUR } from '../../src/lib/clock.ts';
import {
  type Received,
  type Receiver,
  runSchedule,
  startReceiver,
  testWorker,
  verify,
} from '../delivery/support.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { createMerchant } from './api/support.ts';

const OPERATIONAL = ['webhook_endpoint.failing', 'webhook_endpoint.disabled', 'webhook_endpoint.recovered'];

describe('operational events (CONTRACT.md)', () => {
  let w: TestWaybill;
  let watcher: Receiver;
  let failing: Receiver;
  let status = 503;

  beforeAll(async () => {
    w = await startWaybill();
    watcher = await startReceiver();
    failing = await startReceiver((_m, res) => {
      res.statusCode = status;
      res.end();
    });
  });
  afterAll(async () => {
    await watcher?.close();
    await failing?.close();
    await w?.close();
  });

  async function endpoint(
    company: CompanyFixture,
    url: string,
    eventTypes: string[],
    token = company.liveToken,
  ) {
    const created = await call(w, 'POST', '/v1/webhook-endpoints', {
      token,
      body: { url, event_types: eventTypes },
    });
    expect(created.status, created.text).toBe(201);
    return created.body as { id: string; secret: string };
  }

  /** The operational messages a receiver got about an endpoint, verified with the watcher's secret. */
  function about(receiver: Receiver, secret: string, endpointId: string): Json[] {
    return receiver.received
      .filter((m: Received) => String(m.headers['webhook-event']).startsWith('webhook_endpoint.'))
      .filter((m: Received) => JSON.parse(m.body).data.endpoint_id === endpointId)
      .map(
        (m: Received) => verify(m, secret, new Date(Number(m.headers['webhook-timestamp']) * 1000)) as Json,
      );
  }

  it("tells the owner's other subscribed endpoints that one is failing after 24 h, once, then that it was disabled", async () => {
    status = 503;
    const company = await createCompany(w);
    const merchant = await createMerchant(w, company);
    const subject = await endpoint(company, failing.url, ['shipment.created', ...OPERATIONAL]);
    const watching = await endpoint(company, watcher.url, OPERATIONAL);
    const shipmentsOnly = await endpoint(company, watcher.url, ['shipment.created']);
    const otherOwner = await endpoint(company, watcher.url, OPERATIONAL, merchant.token);
    const worker = testWorker(w);
    const started = w.clock.now();
    await createShipment(w, company.liveToken);
    await worker.tick();
    await runSchedule(w, subject.id, worker, new Date(started.getTime() + 5 * DAY));
    await worker.stop();

    const told = about(watcher, watching.secret, subject.id);
    expect(told.map((body) => body.type)).toEqual(['webhook_endpoint.failing', 'webhook_endpoint.disabled']);
    const [failingEvent, disabledEvent] = told;
    expect(failingEvent).toMatchObject({
      tenant_id: company.tenantId,
      livemode: true,
      data: {
        endpoint_id: subject.id,
        url: failing.url,
        failing_since: started.toISOString(),
        disables_at: new Date(started.getTime() + 3 * DAY).toISOString(),
      },
    });
    expect(Object.keys(failingEvent.data).sort()).toEqual([
      'disables_at',
      'endpoint_id',
      'failing_since',
      'url',
    ]);
    expect(new Date(failingEvent.created_at).getTime() - started.getTime()).toBeGreaterThanOrEqual(DAY);
    expect(disabledEvent.data).toEqual({
      endpoint_id: subject.id,
      url: failing.url,
      reason: 'failing',
      disabled_at: disabledEvent.data.disabled_at,
    });
    expect(new Date(disabledEvent.data.disabled_at).getTime() - started.getTime()).toBeGreaterThan(68 * HOUR);

    // Never to the endpoint it is about, nor to another owner's, nor to one not subscribed.
    const deliveredTo = await w.ctx.db
      .selectFrom('webhook_deliveries')
      .select(['endpoint_id', 'event_type'])
      .where('event_type', 'like', 'webhook_endpoint.%')
      .where('endpoint_id', 'in', [subject.id, shipmentsOnly.id, otherOwner.id, watching.id])
      .execute();
    expect(deliveredTo.map((d) => d.endpoint_id)).toEqual([watching.id, watching.id]);
    // Listed with the company's events.
    const events = await w.ctx.db
      .selectFrom('events')
      .select('type')
      .where('tenant_id', '=', company.tenantId)
      .where('type', 'like', 'webhook_endpoint.%')
      .execute();
    expect(events.map((e) => e.type).sort()).toEqual([
      'webhook_endpoint.disabled',
      'webhook_endpoint.failing',
    ]);
  });

  it('tells a recovery only of a streak that was told as failing, and a 410 as a disable for gone', async () => {
    status = 503;
    const company = await createCompany(w);
    const subject = await endpoint(company, failing.url, ['shipment.created', 'shipment.status_changed']);
    const watching = await endpoint(company, watcher.url, OPERATIONAL);
    const worker = testWorker(w);
    const shipment = await createShipment(w, company.liveToken);
    await worker.tick();
    // A short streak ended by a 2xx is no news.
    status = 200;
    await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    await worker.tick();
    expect(about(watcher, watching.secret, subject.id)).toEqual([]);

    // A streak past 24 h is told, and its end is told as a recovery.
    status = 503;
    const second = await createShipment(w, company.liveToken);
    await worker.tick();
    const streakFrom = w.clock.now();
    await runSchedule(w, subject.id, worker, new Date(streakFrom.getTime() + 45 * HOUR));
    status = 200;
    w.clock.advance(HOUR);
    await call(w, 'POST', `/v1/shipments/${second.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    await worker.tick();
    const told = about(watcher, watching.secret, subject.id);
    expect(told.map((body) => body.type)).toEqual(['webhook_endpoint.failing', 'webhook_endpoint.recovered']);
    expect(told[1].data).toEqual({
      endpoint_id: subject.id,
      url: failing.url,
      failing_since: streakFrom.toISOString(),
      recovered_at: w.clock.now().toISOString(),
    });

    // 410 Gone disables at once: told with reason gone.
    status = 410;
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const gone = about(watcher, watching.secret, subject.id).at(-1);
    expect(gone).toMatchObject({ type: 'webhook_endpoint.disabled', data: { reason: 'gone' } });
  });
});
