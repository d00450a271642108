import { describe, expect, it } from 'vitest';
import { RETRY_DELAYS_MS } from '../../src/delivery/schedule.ts';
import { createCompany, createShipment } from '../support/api.ts';
import {
  attemptsOf,
  deliveriesOf,
  endpointRow,
  insertEndpoint,
  startReceiver,
  testWorker,
  useWaybillAndReceiver,
  verify,
} from './support.ts';

describe('retries and disabling', () => {
  const env = useWaybillAndReceiver();

  it('retries after 30 s, 5 min, 30 min, 2 h, 6 h, 12 h, 24 h, 24 h, then fails', async () => {
    const { w, receiver } = env;
    receiver.answer = (_m, res) => {
      res.statusCode = 500;
      res.end('down');
    };
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    const start = receiver.received.length;
    expect(await worker.tick()).toBe(1);
    for (const delay of RETRY_DELAYS_MS) {
      const [pending] = await deliveriesOf(w, endpoint.id);
      expect(pending?.status).toBe('pending');
      expect(new Date(pending?.next_attempt_at as Date).getTime()).toBe(w.clock.now().getTime() + delay);
      w.clock.advance(delay - 1);
      expect(await worker.tick()).toBe(0);
      w.clock.advance(1);
      expect(await worker.tick()).toBe(1);
    }
    await worker.stop();
    const [delivery] = await deliveriesOf(w, endpoint.id);
    expect(delivery?.status).toBe('failed');
    expect(delivery?.attempt_count).toBe(9);
    expect(delivery?.next_attempt_at).toBeNull();
    const messages = receiver.received.slice(start);
    expect(messages).toHaveLength(9);
    expect(new Set(messages.map((m) => m.headers['webhook-id'])).size).toBe(1);
    const attempts = await attemptsOf(w, delivery?.id as string);
    expect(attempts.map((a) => a.status_code)).toEqual(Array(9).fill(500));
    expect(attempts.every((a) => a.trigger === 'scheduled' && a.response_body === 'down')).toBe(true);
    // Each attempt is signed afresh with its own timestamp.
    expect(new Set(messages.map((m) => m.headers['webhook-timestamp'])).size).toBe(9);
    const last = messages.at(-1);
    if (last) expect(verify(last, endpoint.secret, w.clock.now())).toBeTruthy();
  });

  it('disables the endpoint at once on 410 and cancels what waited', async () => {
    const { w, receiver } = env;
    receiver.answer = (_m, res) => {
      res.statusCode = 410;
      res.end();
    };
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w, { maxInFlight: 1 });
    const shipment = await createShipment(w, company.liveToken);
    expect(shipment.id).toBeTruthy();
    await createShipment(w, company.liveToken);
    // One in flight at a time: the first answer's 410 cancels the second before it is sent.
    await worker.tick();
    await worker.stop();
    const row = await endpointRow(w, endpoint.id);
    expect(row.enabled).toBe(false);
    expect(row.disabled_reason).toBe('gone');
    const statuses = (await deliveriesOf(w, endpoint.id)).map((d) => d.status).sort();
    expect(statuses).toEqual(['cancelled', 'failed']);
  });

  it('does not follow a redirect: a 3xx is a failure', async () => {
    const { w, receiver } = env;
    const target = await startReceiver();
    receiver.answer = (_m, res) => {
      res.writeHead(307, { location: target.url });
      res.end();
    };
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    await target.close();
    expect(target.received).toHaveLength(0);
    const [delivery] = await deliveriesOf(w, endpoint.id);
    expect(delivery?.status).toBe('pending');
    expect(delivery?.last_status_code).toBe(307);
  });

  it('gives up on a receiver that never answers at the deadline', async () => {
    const { w, receiver } = env;
    receiver.answer = () => {};
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w, { deadlineMs: 300 });
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const [delivery] = await deliveriesOf(w, endpoint.id);
    expect(delivery?.status).toBe('pending');
    const [attempt] = await attemptsOf(w, delivery?.id as string);
    expect(attempt?.error).toBe('timeout');
    expect(attempt?.status_code).toBeNull();
  });

  it('keeps the first 4 KB of a 1 MB answer and does not download the rest', async () => {
    const { w, receiver } = env;
    let written = 0;
    receiver.answer = (_m, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(1024 * 1024) });
      const chunk = Buffer.alloc(16 * 1024, 'a');
      const timer = setInterval(() => {
        if (res.destroyed || written >= 1024 * 1024) {
          clearInterval(timer);
          if (!res.destroyed) res.end();
          return;
        }
        res.write(chunk);
        written += chunk.length;
      }, 5);
    };
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();
    const [delivery] = await deliveriesOf(w, endpoint.id);
    expect(delivery?.status).toBe('succeeded');
    const [attempt] = await attemptsOf(w, delivery?.id as string);
    expect(attempt?.response_body).toHaveLength(4096);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(written).toBeLessThan(1024 * 1024);
  });
});
