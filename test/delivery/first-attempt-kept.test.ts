import { describe, expect, it } from 'vitest';
import { DAY } from '../../src/lib/clock.ts';
import { call, createCompany, createShipment, type Json } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';
import { deliveriesOf, testWorker, useWaybillAndReceiver, verify } from './support.ts';

/**
 * Issue 34 (decision 0060): a first attempt that succeeds is kept in the delivery it completes,
 * not as a row of its own. The delivery log, the stats and the signature check see no difference.
 */
async function attemptRows(w: TestWaybill, deliveryId: string): Promise<number> {
  const row = await w.ctx.db
    .selectFrom('webhook_attempts')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function endpointFor(
  w: TestWaybill,
  token: string,
  url: string,
): Promise<{ id: string; secret: string }> {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token,
    body: { url, event_types: ['shipment.created'] },
  });
  expect(created.status).toBe(201);
  return { id: created.body.id, secret: created.body.secret };
}

describe('a first attempt that succeeds is kept in its delivery', () => {
  const env = useWaybillAndReceiver();

  it('writes no attempt row, and the log shows the attempt with its answer and the headers sent', async () => {
    const { w, receiver } = env;
    receiver.answer = (_m, res) => res.end('thanks');
    const company = await createCompany(w);
    const endpoint = await endpointFor(w, company.liveToken, receiver.url);
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    expect(await worker.tick()).toBe(1);
    await worker.stop();
    const [delivery] = await deliveriesOf(w, endpoint.id);
    expect(delivery?.status).toBe('succeeded');
    expect(await attemptRows(w, delivery?.id as string)).toBe(0);

    const shown = await call(w, 'GET', `/v1/webhook-deliveries/${delivery?.id}`, {
      token: company.liveToken,
    });
    expect(shown.status).toBe(200);
    expect(shown.body.attempts).toEqual([
      expect.objectContaining({
        status_code: 200,
        response_body: 'thanks',
        trigger: 'scheduled',
        error: null,
      }),
    ]);
    // The headers as sent, read back from the delivery: they verify with the endpoint's secret.
    const sent = receiver.received.at(-1);
    expect(shown.body.message.headers['webhook-signature']).toBe(sent?.headers['webhook-signature']);
    expect(
      verify(
        { headers: shown.body.message.headers, body: shown.body.message.body },
        endpoint.secret,
        w.clock.now(),
      ),
    ).toBeTruthy();

    const stats = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/stats?window=24h`, {
      token: company.liveToken,
    });
    expect(stats.body).toMatchObject({ attempts: 1, succeeded: 1, failed: 0 });
    expect((stats.body.hourly as Json[]).reduce((n, h) => n + Number(h.succeeded), 0)).toBe(1);
  });

  it('keeps failures and later successes as rows, listed in order with the first', async () => {
    const { w, receiver } = env;
    let answers = 0;
    receiver.answer = (_m, res) => {
      answers += 1;
      res.statusCode = answers === 1 ? 503 : 200;
      res.end(answers === 1 ? 'busy' : 'ok');
    };
    const company = await createCompany(w);
    const endpoint = await endpointFor(w, company.liveToken, receiver.url);
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    expect(await worker.tick()).toBe(1);
    w.clock.advance(60_000);
    expect(await worker.tick()).toBe(1);
    const [delivery] = await deliveriesOf(w, endpoint.id);
    expect(delivery?.status).toBe('succeeded');
    expect(await attemptRows(w, delivery?.id as string)).toBe(2);

    // A replay's success is a row too, and the stats count every attempt once.
    const replayed = await call(w, 'POST', `/v1/webhook-deliveries/${delivery?.id}/replay`, {
      token: company.liveToken,
    });
    expect(replayed.status).toBeLessThan(300);
    await worker.tick();
    await worker.stop();
    const shown = await call(w, 'GET', `/v1/webhook-deliveries/${delivery?.id}`, {
      token: company.liveToken,
    });
    expect((shown.body.attempts as Json[]).map((a) => [a.status_code, a.trigger])).toEqual([
      [503, 'scheduled'],
      [200, 'scheduled'],
      [200, 'replay'],
    ]);
    const stats = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/stats?window=24h`, {
      token: company.liveToken,
    });
    expect(stats.body).toMatchObject({ attempts: 3, succeeded: 2, failed: 1 });
  });

  it('writes a row for a first success more than a day after the delivery was made, and counts it once', async () => {
    const { w, receiver } = env;
    receiver.answer = (_m, res) => res.end('ok');
    const company = await createCompany(w);
    const endpoint = await endpointFor(w, company.liveToken, receiver.url);
    await createShipment(w, company.liveToken);
    // No worker ran for two days (an outage of the workers): the first attempt comes then.
    w.clock.advance(2 * DAY);
    const worker = testWorker(w);
    expect(await worker.tick()).toBe(1);
    await worker.stop();
    const [delivery] = await deliveriesOf(w, endpoint.id);
    expect(delivery?.status).toBe('succeeded');
    expect(await attemptRows(w, delivery?.id as string)).toBe(1);
    const shown = await call(w, 'GET', `/v1/webhook-deliveries/${delivery?.id}`, {
      token: company.liveToken,
    });
    expect(shown.body.attempts).toHaveLength(1);
    const stats = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/stats?window=24h`, {
      token: company.liveToken,
    });
    expect(stats.body).toMatchObject({ attempts: 1, succeeded: 1 });
  });
});
