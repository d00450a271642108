import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECOND } from '../../src/lib/clock.ts';
import { advanceSimulations } from '../../src/modules/tracking/simulation.ts';
import { type Receiver, startReceiver, testWorker, verify } from '../delivery/support.ts';
import { expectProblem } from '../http/expect.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * CONTRACT.md, Tracking (issue 51 item 5): POST /v1/shipments/{id}/simulate walks a test shipment
 * through a scenario's checkpoints on the service's clock (source simulation), each with its
 * events, so an integration sees every message without a carrier; a live shipment is 409.
 */
describe('the test-mode simulation', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;
  let secret: string;

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    company = await createCompany(w, 'Sandbox Freight');
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: {
        url: receiver.url,
        event_types: ['shipment.status_changed', 'shipment.checkpoint_added', 'shipment.eta_changed'],
      },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    secret = endpoint.body.secret;
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  /** Moves the service's clock one step at a time, running the worker's job as its timer would. */
  async function walk(seconds: number): Promise<void> {
    for (let t = 0; t < seconds; t += 5) {
      w.clock.advance(5 * SECOND);
      await advanceSimulations(w.ctx);
    }
  }

  async function messagesFor(shipmentId: string): Promise<Json[]> {
    const worker = testWorker(w);
    try {
      while ((await worker.tick()) > 0) {}
    } finally {
      await worker.stop();
    }
    return receiver.received
      .map((m) => verify(m, secret, w.clock.now()) as Json)
      .filter((m) => m.data.shipment.id === shipmentId);
  }

  const simulate = (id: string, scenario: string, token = company.testToken) =>
    call(w, 'POST', `/v1/shipments/${id}/simulate`, { token, body: { scenario } });

  const checkpointsOf = async (id: string) =>
    (await call(w, 'GET', `/v1/shipments/${id}/checkpoints?limit=100`, { token: company.testToken })).body
      .data as Json[];

  it('on_time: to delivered by the clock, one checkpoint every 5 seconds, with every message in order', async () => {
    const shipment = await createShipment(w, company.testToken);
    const started = await simulate(shipment.id, 'on_time');
    expect(started.status, started.text).toBe(202);
    expect(started.body).toMatchObject({ shipment_id: shipment.id, scenario: 'on_time', steps: 5 });
    expect(started.body.id).toMatch(/^sim_/);
    // Nothing before the first step is due.
    await advanceSimulations(w.ctx);
    expect(await checkpointsOf(shipment.id)).toEqual([]);
    await walk(10);
    expect(await checkpointsOf(shipment.id)).toHaveLength(2);
    await walk(30);
    const timeline = await checkpointsOf(shipment.id);
    expect(timeline.map((c) => c.status).reverse()).toEqual([
      'picked_up',
      'in_transit',
      'in_transit',
      'out_for_delivery',
      'delivered',
    ]);
    expect(new Set(timeline.map((c) => c.source))).toEqual(new Set(['simulation']));
    const read = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.testToken });
    expect(read.body.status).toBe('delivered');
    expect(read.body.proof_of_delivery).toMatchObject({ method: 'signature' });
    const messages = await messagesFor(shipment.id);
    const moves = messages.filter((m) => m.type === 'shipment.status_changed').map((m) => m.data.status);
    expect(moves).toEqual(['picked_up', 'in_transit', 'out_for_delivery', 'delivered']);
    expect(messages.filter((m) => m.type === 'shipment.checkpoint_added')).toHaveLength(5);
    // The walk is over: more time adds nothing.
    await walk(30);
    expect(await checkpointsOf(shipment.id)).toHaveLength(5);
  });

  it('delayed: the estimate slips once, told as eta_changed with delayed', async () => {
    const shipment = await createShipment(w, company.testToken);
    expect((await simulate(shipment.id, 'delayed')).status).toBe(202);
    // A clock moved far at once: every due step in one run, in order.
    w.clock.advance(60 * SECOND);
    expect(await advanceSimulations(w.ctx)).toBe(6);
    const changes = (await messagesFor(shipment.id)).filter((m) => m.type === 'shipment.eta_changed');
    expect(changes.map((m) => m.data.delayed)).toEqual([false, true]);
    const read = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.testToken });
    expect(read.body.status).toBe('delivered');
  });

  it('exception_then_delivered and returned end where they say', async () => {
    const recovered = await createShipment(w, company.testToken);
    const refused = await createShipment(w, company.testToken);
    expect((await simulate(recovered.id, 'exception_then_delivered')).status).toBe(202);
    expect((await simulate(refused.id, 'returned')).status).toBe(202);
    await walk(40);
    const statusOf = async (id: string) =>
      (await call(w, 'GET', `/v1/shipments/${id}`, { token: company.testToken })).body.status;
    expect(await statusOf(recovered.id)).toBe('delivered');
    expect(await statusOf(refused.id)).toBe('returned');
    const moves = (await messagesFor(recovered.id))
      .filter((m) => m.type === 'shipment.status_changed')
      .map((m) => m.data.status);
    expect(moves).toContain('exception');
  });

  it('a live shipment is 409 shipment.live; bad input 400; another mode 404; nothing is walked', async () => {
    const live = await createShipment(w, company.liveToken);
    expectProblem(await simulate(live.id, 'on_time', company.liveToken), 409, 'shipment.live');
    expectProblem(await simulate(live.id, 'on_time'), 404, 'shipment.not_found');
    const test = await createShipment(w, company.testToken);
    expectProblem(await simulate(test.id, 'teleport'), 400, 'validation.failed');
    await walk(60);
    expect(await checkpointsOf(test.id)).toEqual([]);
    const liveTimeline = await call(w, 'GET', `/v1/shipments/${live.id}/checkpoints`, {
      token: company.liveToken,
    });
    expect(liveTimeline.body.data).toEqual([]);
  });
});
