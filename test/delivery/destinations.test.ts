import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDLE_MS } from '../../src/delivery/destinations/index.ts';
import { RETRY_DELAYS_MS } from '../../src/delivery/schedule.ts';
import { DAY } from '../../src/lib/clock.ts';
import { expectProblem } from '../http/expect.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  type Consumed,
  capturedLogger,
  consumeQueue,
  declareExchange,
  type NatsStream,
  natsMissing,
  natsServerMissing,
  natsStream,
  type OwnNatsServer,
  ownNatsServer,
  type RabbitPlace,
  rabbitMqMissing,
  rabbitPlace,
  verifyConsumed,
} from './brokers.ts';
import { attemptsOf, deliveriesOf, runSchedule, testWorker } from './support.ts';

/**
 * Destinations (issue 43): an endpoint whose messages go to the company's RabbitMQ exchange or
 * NATS JetStream stream, against the real brokers on 127.0.0.1, with the same signatures, retries,
 * log and ordering as webhooks.
 */
const rabbitMissing = await rabbitMqMissing();
const jetStreamMissing = await natsMissing();
if (rabbitMissing) console.warn(`destinations: RabbitMQ tests skipped: ${rabbitMissing}`);
if (jetStreamMissing) console.warn(`destinations: NATS tests skipped: ${jetStreamMissing}`);
const ownServerMissing = await natsServerMissing();
if (ownServerMissing)
  console.warn(`destinations: tests on a NATS server of their own skipped: ${ownServerMissing}`);

const TYPES = ['shipment.created', 'shipment.status_changed'];
const MOVES = ['picked_up', 'in_transit', 'out_for_delivery', 'delivered'];

/** Every log line the Waybill writes, at every level. */
const { logger, lines: logLines } = capturedLogger();

async function move(w: TestWaybill, company: CompanyFixture, shipmentId: string, status: string) {
  const moved = await call(w, 'POST', `/v1/shipments/${shipmentId}/status`, {
    token: company.liveToken,
    body: { status },
  });
  if (moved.status !== 200) throw new Error(`move failed: ${moved.text}`);
}

/** Two shipments' whole lives, interleaved: answers their ids. */
async function twoShipmentLives(w: TestWaybill, company: CompanyFixture): Promise<string[]> {
  const a = await createShipment(w, company.liveToken);
  const b = await createShipment(w, company.liveToken);
  for (const status of MOVES) {
    await move(w, company, a.id, status);
    await move(w, company, b.id, status);
  }
  return [a.id, b.id];
}

function statusesOf(messages: readonly Consumed[], shipmentId: string): string[] {
  return messages
    .map((m) => JSON.parse(m.body) as Json)
    .filter((body) => body.data.shipment.id === shipmentId)
    .map((body) => body.data.status);
}

async function createDestinationEndpoint(
  w: TestWaybill,
  company: CompanyFixture,
  destination: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  token = company.liveToken,
): Promise<{ id: string; secret: string; body: Json }> {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token,
    body: { destination, event_types: TYPES, ...extra },
  });
  if (created.status !== 201) throw new Error(`endpoint failed: ${created.status} ${created.text}`);
  return { id: created.body.id, secret: created.body.secret, body: created.body };
}

async function testSend(
  w: TestWaybill,
  company: CompanyFixture,
  id: string,
  token = company.liveToken,
): Promise<Json> {
  const sent = await call(w, 'POST', `/v1/webhook-endpoints/${id}/test`, {
    token,
    body: {},
  });
  expect(sent.status, sent.text).toBe(200);
  return sent.body;
}

describe.skipIf(rabbitMissing !== null)('a RabbitMQ destination (issue 43)', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let place: RabbitPlace;

  beforeAll(async () => {
    w = await startWaybill({ logger });
    company = await createCompany(w);
    place = await rabbitPlace();
  });
  afterAll(async () => {
    await w?.close();
    await place?.dispose();
  });

  it("a queue consumer receives every event of two shipments' lives, verified with standardwebhooks, in order per shipment", async () => {
    const consumer = await consumeQueue(place, 'shipments', 'shipment.#');
    const endpoint = await createDestinationEndpoint(
      w,
      company,
      { type: 'rabbitmq', url: place.url, exchange: 'shipments', routing_key: '{event_type}' },
      { ordering: 'per_shipment' },
    );
    expect(endpoint.body.destination).toEqual({
      type: 'rabbitmq',
      url: `amqp://${place.user}:****@127.0.0.1:5672/${place.vhost}`,
      exchange: 'shipments',
      routing_key: '{event_type}',
    });
    const shipments = await twoShipmentLives(w, company);
    const worker = testWorker(w);
    try {
      await worker.tick();
    } finally {
      await worker.stop();
    }
    await expect.poll(() => consumer.received.length).toBe(10);
    for (const message of consumer.received) {
      const verified = verifyConsumed(endpoint.secret, message, w.clock.now()) as Json;
      expect(message.messageId).toBe(message.headers['webhook-id']);
      expect(verified.id).toBe(message.headers['webhook-id']);
      expect(TYPES).toContain(message.headers['webhook-event']);
    }
    for (const id of shipments) expect(statusesOf(consumer.received, id)).toEqual(['confirmed', ...MOVES]);
    // Each delivery succeeded on its first attempt, with no status code and no error.
    const deliveries = await deliveriesOf(w, endpoint.id);
    expect(deliveries.map((d) => d.status)).toEqual(Array(10).fill('succeeded'));
    const [attempt] = await attemptsOf(w, deliveries[0]?.id as string);
    expect(attempt).toMatchObject({ status_code: null, error: null });
    await consumer.close();
  });

  it('the vhost removed mid-stream and restored: nothing is lost, the failures are retried on the schedule with the reason in the log', async () => {
    const endpoint = await createDestinationEndpoint(
      w,
      company,
      { type: 'rabbitmq', url: place.url, exchange: 'outage', routing_key: 'all' },
      { ordering: 'per_shipment' },
    );
    let consumer = await consumeQueue(place, 'outage', 'all');
    const shipment = await createShipment(w, company.liveToken);
    const worker = testWorker(w);
    try {
      await worker.tick();
      await expect.poll(() => consumer.received.length).toBe(1);
      await consumer.close();

      await place.removeVhost();
      await move(w, company, shipment.id, 'picked_up');
      await move(w, company, shipment.id, 'in_transit');
      await worker.tick();
      const waiting = (await deliveriesOf(w, endpoint.id)).filter((d) => d.status === 'pending');
      expect(waiting).toHaveLength(2);
      const first = waiting.find((d) => d.attempt_count === 1);
      expect(first).toBeDefined();
      const [failed] = await attemptsOf(w, first?.id as string);
      expect(failed?.status_code).toBeNull();
      expect(['broker_refused', 'connection_failed']).toContain(failed?.error);
      expect(failed?.response_body).toBeTruthy();
      // The next attempt is the schedule's (30 s), not sooner.
      w.clock.advance(29_000);
      await worker.tick();
      expect((await attemptsOf(w, first?.id as string)).length).toBe(1);

      await place.addVhost();
      consumer = await consumeQueue(place, 'outage', 'all');
      await runSchedule(w, endpoint.id, worker, new Date(w.clock.now().getTime() + DAY));
      await expect.poll(() => consumer.received.length).toBe(2);
      expect(statusesOf(consumer.received, shipment.id)).toEqual(['picked_up', 'in_transit']);
      expect((await deliveriesOf(w, endpoint.id)).map((d) => d.status)).toEqual(Array(3).fill('succeeded'));
      await consumer.close();
    } finally {
      await worker.stop();
    }
  });

  it('an unroutable message, a missing exchange and a bad password each give their reason in the log', async () => {
    await declareExchange(place, 'nowhere');
    const unroutable = await createDestinationEndpoint(w, company, {
      type: 'rabbitmq',
      url: place.url,
      exchange: 'nowhere',
      routing_key: 'x',
    });
    const sent = await testSend(w, company, unroutable.id);
    expect(sent).toMatchObject({ status_code: null, error: 'broker_unroutable' });
    expect(sent.response_body).toContain('NO_ROUTE');

    const missing = await createDestinationEndpoint(w, company, {
      type: 'rabbitmq',
      url: place.url,
      exchange: 'not-declared',
      routing_key: 'x',
    });
    const refused = await testSend(w, company, missing.id);
    expect(refused).toMatchObject({ status_code: null, error: 'broker_refused' });
    expect(refused.response_body).toContain("no exchange 'not-declared'");

    const badUrl = place.url.replace(place.password, 'not-the-password');
    const badPassword = await createDestinationEndpoint(w, company, {
      type: 'rabbitmq',
      url: badUrl,
      exchange: 'shipments',
      routing_key: 'x',
    });
    const denied = await testSend(w, company, badPassword.id);
    expect(denied).toMatchObject({ status_code: null, error: 'auth_failed' });
    expect(denied.response_body).toContain('ACCESS_REFUSED');

    // The delivery log shows what the broker answered.
    const log = await call(w, 'GET', `/v1/webhook-deliveries/${denied.delivery_id}`, {
      token: company.liveToken,
    });
    expect(log.body.attempts[0]).toMatchObject({ status_code: null, error: 'auth_failed' });
    expect(log.body.attempts[0].response_body).toContain('ACCESS_REFUSED');
  });

  it('bad destinations get 422 validation.failed with their path', async () => {
    const post = (destination: Record<string, unknown>) =>
      call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { destination, event_types: TYPES },
      });
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'kafka', url: 'kafka://broker:9092' }, '/destination/type'],
      [{ type: 'rabbitmq', url: 'https://example.com', exchange: 'x' }, '/destination/url'],
      [{ type: 'rabbitmq', url: place.url }, '/destination/exchange'],
      [{ type: 'nats', url: 'nats://127.0.0.1:4222' }, '/destination/subject'],
      [{ type: 'nats', url: 'amqp://127.0.0.1', subject: 'a' }, '/destination/url'],
    ];
    for (const [destination, path] of cases) {
      const answer = await post(destination);
      expectProblem(answer, 422, 'validation.failed');
      expect(answer.body.errors.map((e: Json) => e.path)).toContain(path);
    }
  });

  it('the credentials never appear in an API answer, a page or a log line; a new host needs the password stated', async () => {
    // A test-mode endpoint: the dashboard of a company not live yet shows test data.
    const token = company.testToken;
    const endpoint = await createDestinationEndpoint(
      w,
      company,
      { type: 'rabbitmq', url: place.url, exchange: 'shipments', routing_key: 'x' },
      {},
      token,
    );
    const answers = [
      JSON.stringify(endpoint.body),
      (await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}`, { token })).text,
      (await call(w, 'GET', '/v1/webhook-endpoints', { token })).text,
    ];
    // Sending the masked URL back keeps the password (same host)...
    const kept = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      token,
      body: { destination: { ...endpoint.body.destination, routing_key: 'y' } },
    });
    expect(kept.status, kept.text).toBe(200);
    answers.push(kept.text);
    await declareExchange(place, 'shipments');
    const consumer = await consumeQueue(place, 'shipments', 'y');
    expect(await testSend(w, company, endpoint.id, token)).toMatchObject({ error: null });
    await consumer.close();
    // ...but not to another host.
    const moved = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      token,
      body: {
        destination: {
          ...endpoint.body.destination,
          url: endpoint.body.destination.url.replace('127.0.0.1', '127.0.0.2'),
        },
      },
    });
    expectProblem(moved, 422, 'validation.failed');
    const page = await w.app.inject({
      method: 'GET',
      url: `/dashboard/webhooks/${endpoint.id}`,
      headers: { cookie: `waybill_session=${company.owner.token}` },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`${place.user}:****@127.0.0.1`);
    answers.push(page.body);
    for (const text of [...answers, ...logLines]) expect(text).not.toContain(place.password);
    expect(logLines.length).toBeGreaterThan(0);
  });

  it('a broker URL on a private address is refused unless WAYBILL_WEBHOOK_ALLOW_PRIVATE names it', async () => {
    const strict = await startWaybill({ env: { WAYBILL_WEBHOOK_ALLOW_PRIVATE: '' } });
    try {
      const other = await createCompany(strict);
      const refused = await call(strict, 'POST', '/v1/webhook-endpoints', {
        token: other.liveToken,
        body: {
          destination: { type: 'rabbitmq', url: place.url, exchange: 'shipments', routing_key: 'x' },
          event_types: TYPES,
        },
      });
      expectProblem(refused, 422, 'webhook_endpoint.url_not_allowed');
      expect(refused.text).not.toContain(place.password);
    } finally {
      await strict.close();
    }
  });
});

describe.skipIf(jetStreamMissing !== null)('a NATS JetStream destination (issue 43)', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let stream: NatsStream;

  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    stream = await natsStream();
  });
  afterAll(async () => {
    await w?.close();
    await stream?.dispose();
  });

  it("a JetStream consumer receives every event of two shipments' lives, verified with standardwebhooks, in order per shipment", async () => {
    const endpoint = await createDestinationEndpoint(
      w,
      company,
      { type: 'nats', url: 'nats://127.0.0.1:4222', subject: `${stream.prefix}.{event_type}` },
      { ordering: 'per_shipment' },
    );
    const shipments = await twoShipmentLives(w, company);
    const worker = testWorker(w);
    try {
      await worker.tick();
    } finally {
      await worker.stop();
    }
    const received = await stream.read();
    expect(received).toHaveLength(10);
    for (const message of received) {
      const verified = verifyConsumed(endpoint.secret, message, w.clock.now()) as Json;
      expect(message.messageId).toBe(message.headers['webhook-id']);
      expect(verified.id).toBe(message.headers['webhook-id']);
    }
    for (const id of shipments) expect(statusesOf(received, id)).toEqual(['confirmed', ...MOVES]);
    const deliveries = await deliveriesOf(w, endpoint.id);
    expect(deliveries.map((d) => d.status)).toEqual(Array(10).fill('succeeded'));
  });

  it('the stream removed mid-stream and restored: nothing is lost, the failures are retried on the schedule with the reason', async () => {
    const endpoint = await createDestinationEndpoint(
      w,
      company,
      { type: 'nats', url: 'nats://127.0.0.1:4222', subject: `${stream.prefix}.outage` },
      { ordering: 'per_shipment' },
    );
    const worker = testWorker(w);
    try {
      const shipment = await createShipment(w, company.liveToken);
      await worker.tick();
      await stream.remove();
      await move(w, company, shipment.id, 'picked_up');
      await move(w, company, shipment.id, 'in_transit');
      await worker.tick();
      const first = (await deliveriesOf(w, endpoint.id)).find(
        (d) => d.status === 'pending' && d.attempt_count === 1,
      );
      const [failed] = await attemptsOf(w, first?.id as string);
      expect(failed).toMatchObject({ status_code: null, error: 'broker_refused' });
      expect(failed?.response_body).toContain('no stream');
      w.clock.advance(29_000);
      await worker.tick();
      expect((await attemptsOf(w, first?.id as string)).length).toBe(1);

      await stream.add();
      // A replay goes at once, outside the order, through the API's own connection.
      const replayed = await call(w, 'POST', `/v1/webhook-deliveries/${first?.id}/replay`, {
        token: company.liveToken,
      });
      expect(replayed.status, replayed.text).toBe(200);
      expect(replayed.body).toMatchObject({ status_code: null, error: null });
      await runSchedule(w, endpoint.id, worker, new Date(w.clock.now().getTime() + DAY));
      const received = (await stream.read()).filter(
        (m) => JSON.parse(m.body).data.shipment.id === shipment.id,
      );
      expect(statusesOf(received, shipment.id)).toEqual(['picked_up', 'in_transit']);
      expect((await deliveriesOf(w, endpoint.id)).map((d) => d.status)).toEqual(Array(3).fill('succeeded'));
    } finally {
      await worker.stop();
    }
  });

  it('a subject no stream captures is broker_refused with the reason (test send)', async () => {
    const endpoint = await createDestinationEndpoint(w, company, {
      type: 'nats',
      url: 'nats://127.0.0.1:4222',
      subject: 'waybill.nobody.listens',
    });
    const sent = await testSend(w, company, endpoint.id);
    expect(sent).toMatchObject({ status_code: null, error: 'broker_refused' });
    expect(sent.response_body).toContain('no stream listens to the subject waybill.nobody.listens');
  });
});

describe.skipIf(ownServerMissing !== null)(
  "a NATS server of the test's own, stopped and started (issue 43)",
  () => {
    let w: TestWaybill;
    let company: CompanyFixture;
    let own: OwnNatsServer;

    beforeAll(async () => {
      w = await startWaybill();
      company = await createCompany(w);
      own = await ownNatsServer();
    });
    afterAll(async () => {
      await w?.close();
      await own?.dispose();
    });

    /** The connections Waybill's delivery keeps to the server, as the server sees them. */
    const deliveryClients = async () =>
      (await own.clients()).filter((c) => c.name === 'waybill-delivery').map((c) => c.cid);

    it("a wrong password is auth_failed with the server's reason in the attempt log", async () => {
      const wrong = own.url.replace(own.password, 'not-the-password');
      const endpoint = await createDestinationEndpoint(w, company, {
        type: 'nats',
        url: wrong,
        subject: `${own.stream.prefix}.denied`,
      });
      const sent = await testSend(w, company, endpoint.id);
      expect(sent).toMatchObject({ status_code: null, error: 'auth_failed' });
      const log = await call(w, 'GET', `/v1/webhook-deliveries/${sent.delivery_id}`, {
        token: company.liveToken,
      });
      expect(log.body.attempts[0]).toMatchObject({ status_code: null, error: 'auth_failed' });
      expect(log.body.attempts[0].response_body).toContain('Authorization Violation');
      expect(log.text).not.toContain('not-the-password');
      await call(w, 'DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: company.liveToken });
    });

    it('stopped mid-stream and started again: every event arrives, the failures are retried on the schedule with the reason, the worker reconnects', async () => {
      const endpoint = await createDestinationEndpoint(
        w,
        company,
        { type: 'nats', url: own.url, subject: `${own.stream.prefix}.{event_type}` },
        { ordering: 'per_shipment' },
      );
      const worker = testWorker(w);
      try {
        const shipment = await createShipment(w, company.liveToken);
        await worker.tick();
        expect(await own.stream.read()).toHaveLength(1);
        const [before] = await deliveryClients();
        expect(before).toBeDefined();

        await own.stop();
        await move(w, company, shipment.id, 'picked_up');
        await move(w, company, shipment.id, 'in_transit');
        const failedAt = w.clock.now().getTime();
        await worker.tick();
        const waiting = (await deliveriesOf(w, endpoint.id)).filter((d) => d.status === 'pending');
        expect(waiting.map((d) => d.attempt_count)).toEqual([1, 0]);
        const first = waiting[0];
        const firstId = first?.id as string;
        const [failed] = await attemptsOf(w, firstId);
        expect(failed).toMatchObject({ status_code: null, error: 'connection_failed' });
        expect(failed?.response_body).toContain('connection refused');
        // Not before the schedule's first wait...
        w.clock.advance((RETRY_DELAYS_MS[0] as number) - 1000);
        await worker.tick();
        expect(await attemptsOf(w, firstId)).toHaveLength(1);
        // ...and at it, failing again while the server is still down.
        w.clock.advance(1000);
        await worker.tick();
        const retried = await attemptsOf(w, firstId);
        expect(retried).toHaveLength(2);
        expect(retried.map((a) => new Date(a.attempted_at).getTime() - failedAt)).toEqual([
          0,
          RETRY_DELAYS_MS[0],
        ]);
        expect(retried[1]).toMatchObject({ status_code: null, error: 'connection_failed' });

        await own.start();
        // The next attempt waits for the schedule's second wait.
        w.clock.advance((RETRY_DELAYS_MS[1] as number) - 1000);
        await worker.tick();
        expect(await attemptsOf(w, firstId)).toHaveLength(2);
        await runSchedule(w, endpoint.id, worker, new Date(w.clock.now().getTime() + DAY));
        const attempts = await attemptsOf(w, firstId);
        expect(attempts.map((a) => a.error)).toEqual(['connection_failed', 'connection_failed', null]);
        expect(new Date(attempts[2]?.attempted_at as Date).getTime() - failedAt).toBe(
          (RETRY_DELAYS_MS[0] as number) + (RETRY_DELAYS_MS[1] as number),
        );
        const received = await own.stream.read();
        expect(statusesOf(received, shipment.id)).toEqual(['confirmed', 'picked_up', 'in_transit']);
        // Each verified as its consumer would have, when it came.
        for (const message of received) {
          const sentAt = new Date(Number(message.headers['webhook-timestamp']) * 1000);
          expect(verifyConsumed(endpoint.secret, message, sentAt)).toMatchObject({
            type: expect.any(String),
          });
        }
        expect((await deliveriesOf(w, endpoint.id)).map((d) => d.status)).toEqual(Array(3).fill('succeeded'));
        // The worker connected again: one connection, not the one the stop broke.
        const after = await deliveryClients();
        expect(after).toHaveLength(1);
        expect(after[0]).not.toBe(before);
      } finally {
        await worker.stop();
        await call(w, 'DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: company.liveToken });
      }
    });

    it('an idle connection is closed once the clock passes the idle time, and the next message connects again', async () => {
      const endpoint = await createDestinationEndpoint(w, company, {
        type: 'nats',
        url: own.url,
        subject: `${own.stream.prefix}.idle`,
      });
      const worker = testWorker(w);
      try {
        const shipment = await createShipment(w, company.liveToken);
        await worker.tick();
        const [kept] = await deliveryClients();
        expect(kept).toBeDefined();
        // Just short of the idle time, the next message goes on the same connection.
        w.clock.advance(IDLE_MS - 1000);
        await worker.tick();
        await move(w, company, shipment.id, 'picked_up');
        await worker.tick();
        expect(await deliveryClients()).toEqual([kept]);

        w.clock.advance(IDLE_MS);
        await worker.tick();
        await expect.poll(deliveryClients).toEqual([]);

        await move(w, company, shipment.id, 'in_transit');
        await worker.tick();
        const [again] = await deliveryClients();
        expect(again).toBeDefined();
        expect(again).not.toBe(kept);
        expect((await deliveriesOf(w, endpoint.id)).map((d) => d.status)).toEqual(Array(3).fill('succeeded'));
      } finally {
        await worker.stop();
      }
    });
  },
);

describe('a broker that accepts the connection and never answers', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('costs the worker one deadline, as a dead HTTP receiver does: the attempt fails as a timeout and is retried', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    try {
      const company = await createCompany(w);
      for (const destination of [
        { type: 'rabbitmq', url: `amqp://u:secret-pw@127.0.0.1:${port}/v`, exchange: 'x', routing_key: 'y' },
        { type: 'nats', url: `nats://127.0.0.1:${port}`, subject: 'waybill.silent' },
      ]) {
        const endpoint = await createDestinationEndpoint(w, company, destination, {}, company.liveToken);
        await createShipment(w, company.liveToken);
        const worker = testWorker(w, { deadlineMs: 300 });
        try {
          await worker.tick();
        } finally {
          await worker.stop();
        }
        const [delivery] = await deliveriesOf(w, endpoint.id);
        expect(delivery).toMatchObject({ status: 'pending', attempt_count: 1 });
        const [attempt] = await attemptsOf(w, delivery?.id as string);
        expect(attempt).toMatchObject({ status_code: null, error: 'timeout' });
        await call(w, 'DELETE', `/v1/webhook-endpoints/${endpoint.id}`, { token: company.liveToken });
      }
      expect(sockets.length).toBeGreaterThanOrEqual(2);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });
});
