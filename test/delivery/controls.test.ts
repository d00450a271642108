import { describe, expect, it } from 'vitest';
import { startThreadReceiver } from '../../bench/thread-receiver.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';
import {
  attemptsOf,
  deliveriesOf,
  startReceiver,
  startTwoWorkers,
  testWorker,
  useWaybillAndReceiver,
  verify,
} from './support.ts';

/** An endpoint made through the API, with the controls given. */
async function createEndpoint(
  w: TestWaybill,
  company: CompanyFixture,
  url: string,
  controls: Record<string, unknown> = {},
): Promise<{ id: string; secret: string; body: Json }> {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token: company.liveToken,
    body: { url, event_types: ['shipment.created', 'shipment.status_changed'], ...controls },
  });
  if (created.status !== 201) throw new Error(`endpoint failed: ${created.text}`);
  return { id: created.body.id, secret: created.body.secret, body: created.body };
}

describe('custom headers (issue 23)', () => {
  const env = useWaybillAndReceiver();

  it('go with every message and test send; Waybill headers are never replaced; credentials are masked in the log', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url, {
      headers: { 'X-Route': 'eu-1', Authorization: 'Bearer sk_receiver_0123456789abcd' },
    });
    const worker = testWorker(w);
    const start = receiver.received.length;
    await createShipment(w, company.liveToken);
    expect(await worker.tick()).toBe(1);
    const tested = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, {
      token: company.liveToken,
    });
    expect(tested.status).toBe(200);
    await worker.stop();
    const messages = receiver.received.slice(start);
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      expect(message.headers['x-route']).toBe('eu-1');
      expect(message.headers.authorization).toBe('Bearer sk_receiver_0123456789abcd');
      expect(verify(message, endpoint.secret, w.clock.now())).toBeTruthy();
    }
    // The attempt log keeps the credential masked, as the API shows it.
    const [delivery] = await deliveriesOf(w, endpoint.id);
    const [attempt] = await attemptsOf(w, delivery?.id as string);
    expect(attempt?.request_headers).toMatchObject({ 'x-route': 'eu-1', authorization: '••••••••abcd' });
    const detail = await call(w, 'GET', `/v1/webhook-deliveries/${delivery?.id}`, {
      token: company.liveToken,
    });
    expect(JSON.stringify(detail.body)).not.toContain('sk_receiver_0123456789abcd');
  });

  it('cannot replace a header Waybill sets, even stored behind the API', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url);
    // Stored directly: the API refuses these names (422); the engine leaves them out again.
    const stored = {
      'Webhook-Id': 'msg_forged',
      'content-type': 'text/plain',
      'User-Agent': 'forged',
      Host: 'elsewhere.example',
      'x-split': 'a\r\nx-injected: yes',
      'X-Kept': 'kept',
    };
    await w.ctx.db
      .updateTable('webhook_endpoints')
      .set({ headers_sealed: w.ctx.secrets.seal(JSON.stringify(stored)) })
      .where('id', '=', endpoint.id)
      .execute();
    const worker = testWorker(w);
    const start = receiver.received.length;
    await createShipment(w, company.liveToken);
    expect(await worker.tick()).toBe(1);
    await worker.stop();
    const [message] = receiver.received.slice(start);
    expect(message?.headers['x-kept']).toBe('kept');
    expect(message?.headers['webhook-id']).toMatch(/^evt_/);
    expect(message?.headers['content-type']).toBe('application/json');
    expect(message?.headers['user-agent']).toMatch(/^Waybill-Webhooks/);
    expect(message?.headers.host).toBe(new URL(receiver.url).host);
    expect(message?.headers['x-split']).toBeUndefined();
    expect(message?.headers['x-injected']).toBeUndefined();
    if (message) expect(verify(message, endpoint.secret, w.clock.now())).toBeTruthy();
  });
});

describe('Retry-After (issue 23)', () => {
  const env = useWaybillAndReceiver();

  async function endpointRead(w: TestWaybill, company: CompanyFixture, id: string): Promise<Json> {
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    return read.body;
  }

  it('a 429 with Retry-After in seconds pauses the endpoint: what waits uses no attempts, the answered delivery comes back after the pause', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url);
    let answered = 0;
    receiver.answer = (_m, res) => {
      answered += 1;
      if (answered === 1) {
        res.writeHead(429, { 'retry-after': '120' });
        res.end('slow down');
      } else res.end('ok');
    };
    // One request in flight at a time: the 429 comes back before anything else is sent.
    const worker = testWorker(w, { maxInFlight: 1 });
    const start = receiver.received.length;
    for (let i = 0; i < 3; i++) await createShipment(w, company.liveToken);
    const answeredAt = w.clock.now();
    await worker.tick();
    expect(receiver.received.length - start).toBe(1);
    const pausedUntil = new Date(answeredAt.getTime() + 120_000);
    expect((await endpointRead(w, company, endpoint.id)).paused_until).toBe(pausedUntil.toISOString());
    const first = receiver.received[start]?.headers['webhook-id'];
    const byEvent = async () => {
      const deliveries = await deliveriesOf(w, endpoint.id);
      return new Map(deliveries.map((d) => [d.event_id, d]));
    };
    let deliveries = await byEvent();
    // The answered delivery's next attempt is the pause's end (later than its 30 s retry).
    expect(deliveries.get(first as string)).toMatchObject({ attempt_count: 1, status: 'pending' });
    expect(deliveries.get(first as string)?.next_attempt_at?.getTime()).toBe(pausedUntil.getTime());
    expect([...deliveries.values()].map((d) => d.attempt_count).sort()).toEqual([0, 0, 1]);
    // An event during the pause waits too: no worker claims for a paused endpoint.
    await createShipment(w, company.liveToken);

    // Past the 30 s retry and up to the pause's last millisecond: nothing goes, no attempt is used,
    // whichever worker claims (another one knows of the pause only from the database).
    const another = testWorker(w);
    w.clock.advance(30_000);
    await another.tick();
    await worker.tick();
    w.clock.advance(89_999);
    await another.tick();
    await worker.tick();
    await another.stop();
    expect(receiver.received.length - start).toBe(1);
    deliveries = await byEvent();
    expect([...deliveries.values()].map((d) => d.attempt_count).sort()).toEqual([0, 0, 0, 1]);

    // The pause over: all four go, the waiting ones on their first attempt.
    w.clock.advance(1);
    await worker.tick();
    await worker.stop();
    expect(receiver.received.length - start).toBe(5);
    deliveries = await byEvent();
    expect([...deliveries.values()].map((d) => [d.status, d.attempt_count]).sort()).toEqual([
      ['succeeded', 1],
      ['succeeded', 1],
      ['succeeded', 1],
      ['succeeded', 2],
    ]);
  });

  it('a pause holds back what a worker holds for a rate-limited endpoint, waiting for its send times', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url, { rate_limit: 3 });
    receiver.answer = (_m, res) => {
      res.writeHead(429, { 'retry-after': '60' });
      res.end();
    };
    try {
      const worker = testWorker(w);
      const start = receiver.received.length;
      for (let i = 0; i < 3; i++) await createShipment(w, company.liveToken);
      // The claim gives two of them send times a third of a second apart (about 0.92 * 3 a
      // second): the first one's 429 comes back before the second's time.
      await worker.tick();
      await worker.stop();
      expect(receiver.received.length - start).toBe(1);
      const counts = (await deliveriesOf(w, endpoint.id)).map((d) => d.attempt_count).sort();
      expect(counts).toEqual([0, 0, 1]);
    } finally {
      receiver.answer = (_m, res) => res.end('ok');
    }
  });

  it('a 503 with an HTTP date pauses until then, capped at an hour; other endpoints keep going', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const other = await startReceiver();
    try {
      const endpoint = await createEndpoint(w, company, receiver.url);
      const bystander = await createEndpoint(w, company, other.url);
      const inTenMinutes = new Date(Math.floor(w.clock.now().getTime() / 1000) * 1000 + 600_000);
      receiver.answer = (_m, res) => {
        res.writeHead(503, { 'retry-after': inTenMinutes.toUTCString() });
        res.end();
      };
      const worker = testWorker(w, { maxInFlight: 1 });
      await createShipment(w, company.liveToken);
      await worker.tick();
      expect((await endpointRead(w, company, endpoint.id)).paused_until).toBe(inTenMinutes.toISOString());
      expect(other.received).toHaveLength(1);

      // A pause asked for a day is an hour.
      receiver.answer = (_m, res) => {
        res.writeHead(429, { 'retry-after': '86400' });
        res.end();
      };
      w.clock.advance(600_000);
      const answeredAt = w.clock.now();
      await worker.tick();
      expect((await endpointRead(w, company, endpoint.id)).paused_until).toBe(
        new Date(answeredAt.getTime() + 3_600_000).toISOString(),
      );
      // The bystander endpoint is not paused: a new event reaches it at once.
      await createShipment(w, company.liveToken);
      await worker.tick();
      await worker.stop();
      expect(other.received).toHaveLength(2);
      expect((await endpointRead(w, company, bystander.id)).paused_until).toBeNull();
      const [delivery] = await deliveriesOf(w, endpoint.id);
      expect(delivery?.attempt_count).toBe(2);
    } finally {
      other.close();
      receiver.answer = (_m, res) => res.end('ok');
    }
  });
});

describe('rate limits across workers (issue 23)', () => {
  const env = useWaybillAndReceiver();

  it('an endpoint limited to N gets at most N messages in any sliding second from two workers (processes on PostgreSQL); an unlimited one beside it is not held back', async () => {
    const { w, receiver } = env;
    const LIMIT = 10;
    const MESSAGES = 40;
    const company = await createCompany(w);
    const limitedReceiver = await startThreadReceiver();
    const arrivals = limitedReceiver.times;
    let unlimitedDoneWhenLimitedHad = -1;
    receiver.answer = (_m, res) => {
      if (receiver.received.length === MESSAGES) unlimitedDoneWhenLimitedHad = arrivals.length;
      res.end('ok');
    };
    try {
      const limited = await createEndpoint(w, company, limitedReceiver.url, { rate_limit: LIMIT });
      await createEndpoint(w, company, receiver.url);
      const start = receiver.received.length;
      for (let i = 0; i < MESSAGES; i++) await createShipment(w, company.liveToken);
      // The rate is a promise in real time: two workers on the system clock, on PostgreSQL two
      // `waybill worker` processes.
      const stop = startTwoWorkers(w, { jitter: () => 0 });
      const started = performance.now();
      while (arrivals.length < MESSAGES && performance.now() - started < 60_000)
        await new Promise((resolve) => setTimeout(resolve, 50));
      await stop();
      expect(arrivals).toHaveLength(MESSAGES);
      expect(receiver.received.length - start).toBe(MESSAGES);
      // Sliding windows: from each arrival, those within the next second.
      const sorted = [...arrivals].sort((a, b) => a - b);
      const most = Math.max(...sorted.map((t) => sorted.filter((u) => u >= t && u < t + 1000).length));
      expect(most).toBeLessThanOrEqual(LIMIT);
      // The unlimited endpoint had all its messages while the limited one still had a backlog.
      expect(unlimitedDoneWhenLimitedHad).toBeGreaterThanOrEqual(0);
      expect(unlimitedDoneWhenLimitedHad).toBeLessThan(MESSAGES / 2);
      const outcomes = (await deliveriesOf(w, limited.id)).map((d) => `${d.status}/${d.attempt_count}`);
      expect(new Set(outcomes)).toEqual(new Set(['succeeded/1']));
    } finally {
      await limitedReceiver.close();
      receiver.answer = (_m, res) => res.end('ok');
    }
  });
});
