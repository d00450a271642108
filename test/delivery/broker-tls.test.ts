import { connect as netConnect, type Server, type Socket } from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../http/expect.ts';
import { type CompanyFixture, call, createCompany, type Json } from '../support/api.ts';
import { selfSignedCertificate, type TlsFiles } from '../support/certificate.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  consumeQueue,
  natsServerMissing,
  type OwnNatsServer,
  ownNatsServer,
  RABBIT_PORT,
  type RabbitPlace,
  rabbitMqMissing,
  rabbitPlace,
  verifyConsumed,
} from './brokers.ts';

/**
 * CONTRACT.md, Trust 3 (brokers over TLS): a broker destination outside the private allowlist must
 * use TLS (422 `webhook_endpoint.destination_insecure` otherwise), and TLS brokers are delivered to:
 * the machine's RabbitMQ behind a TLS listener the test starts, and a NATS server of the test's own
 * that requires TLS, each with a self-signed certificate the process trusts as NODE_EXTRA_CA_CERTS
 * would make it (tls.setDefaultCACertificates, the same store).
 */
const rabbitMissing = await rabbitMqMissing();
const natsMissing = await natsServerMissing();

/** A TLS listener on 127.0.0.1 in front of the machine's RabbitMQ (as a TLS-terminating proxy is). */
async function tlsFrontOfRabbit(files: TlsFiles): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = tls.createServer({ cert: files.cert, key: files.key }, (secure) => {
    const plain = netConnect({ host: '127.0.0.1', port: RABBIT_PORT });
    sockets.add(secure).add(plain);
    secure.pipe(plain).pipe(secure);
    const end = () => {
      secure.destroy();
      plain.destroy();
    };
    secure.on('error', end).on('close', end);
    plain.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

let w: TestWaybill;
let company: CompanyFixture;
/** The deliveries' own company: the checks above use up the endpoint limit of the first. */
let receiving: CompanyFixture;
let files: TlsFiles;
let place: RabbitPlace | null = null;
let front: Awaited<ReturnType<typeof tlsFrontOfRabbit>> | null = null;
let own: OwnNatsServer | null = null;
const trustedBefore = tls.getCACertificates('default');

beforeAll(async () => {
  files = selfSignedCertificate('broker-tls-');
  tls.setDefaultCACertificates([...trustedBefore, files.cert]);
  w = await startWaybill();
  company = await createCompany(w, 'Broker Co');
  receiving = await createCompany(w, 'Receiving Co');
  if (rabbitMissing === null) {
    place = await rabbitPlace();
    front = await tlsFrontOfRabbit(files);
  }
  if (natsMissing === null) own = await ownNatsServer({ tls: files });
});
afterAll(async () => {
  tls.setDefaultCACertificates(trustedBefore);
  await front?.close();
  await place?.dispose();
  await own?.dispose();
  await w?.close();
});

describe('brokers over TLS (Trust 3)', () => {
  const create = (destination: Record<string, unknown>, on = company) =>
    call(w, 'POST', '/v1/webhook-endpoints', {
      token: on.liveToken,
      body: { destination, event_types: ['shipment.created'] },
    });
  const endpointCount = async () =>
    (await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken })).body.data.length;

  it('refuses a plaintext broker on a public address with destination_insecure, and writes nothing', async () => {
    const before = await endpointCount();
    const amqp = await create({
      type: 'rabbitmq',
      url: 'amqp://user:s3cret-pass@93.184.216.34/vh',
      exchange: 'shipments',
    });
    expectProblem(amqp, 422, 'webhook_endpoint.destination_insecure');
    expect(amqp.text).not.toContain('s3cret-pass');
    expect(amqp.body.errors[0].path).toBe('/destination/url');
    const nats = await create({ type: 'nats', url: 'nats://93.184.216.34:4222', subject: 'orders.x' });
    expectProblem(nats, 422, 'webhook_endpoint.destination_insecure');
    expect(await endpointCount()).toBe(before);
    // The same brokers over TLS are accepted.
    const amqps = await create({
      type: 'rabbitmq',
      url: 'amqps://user:s3cret-pass@93.184.216.34/vh',
      exchange: 'shipments',
    });
    expect(amqps.status, amqps.text).toBe(201);
    const natsTls = await create({ type: 'nats', url: 'tls://93.184.216.34:4222', subject: 'orders.x' });
    expect(natsTls.status, natsTls.text).toBe(201);
    // And a PATCH cannot turn one back to plaintext.
    const back = await call(w, 'PATCH', `/v1/webhook-endpoints/${amqps.body.id}`, {
      token: company.liveToken,
      body: {
        destination: { type: 'rabbitmq', url: 'amqp://user:****@93.184.216.34/vh', exchange: 'shipments' },
      },
    });
    expect(back.status).toBe(422);
  });

  it('L2: a masked amqps:// URL turned into amqp:// does not keep the stored password', async () => {
    const made = await create({
      type: 'rabbitmq',
      url: 'amqps://user:kept-secret@127.0.0.1:5671/vh',
      exchange: 'shipments',
    });
    expect(made.status, made.text).toBe(201);
    const masked = made.body.destination.url as string;
    expect(masked).toBe('amqps://user:****@127.0.0.1:5671/vh');
    const plain = await call(w, 'PATCH', `/v1/webhook-endpoints/${made.body.id}`, {
      token: company.liveToken,
      body: { destination: { ...made.body.destination, url: masked.replace('amqps:', 'amqp:') } },
    });
    expectProblem(plain, 422, 'validation.failed');
    // The same scheme, host and port keeps it.
    const same = await call(w, 'PATCH', `/v1/webhook-endpoints/${made.body.id}`, {
      token: company.liveToken,
      body: { destination: { ...made.body.destination, exchange: 'orders' } },
    });
    expect(same.status, same.text).toBe(200);
  });

  it('I1: a NATS token in the URL (nats://TOKEN@host) is masked in every answer, and kept when sent back masked', async () => {
    const made = await create({
      type: 'nats',
      url: 'nats://s3cret-token@127.0.0.1:4222',
      subject: 'orders.t',
    });
    expect(made.status, made.text).toBe(201);
    expect(made.text).not.toContain('s3cret-token');
    expect(made.body.destination.url).toBe('nats://****@127.0.0.1:4222');
    const listed = await call(w, 'GET', `/v1/webhook-endpoints/${made.body.id}`, {
      token: company.liveToken,
    });
    expect(listed.text).not.toContain('s3cret-token');
    const kept = await call(w, 'PATCH', `/v1/webhook-endpoints/${made.body.id}`, {
      token: company.liveToken,
      body: { destination: { ...made.body.destination, subject: 'orders.u' } },
    });
    expect(kept.status, kept.text).toBe(200);
    const sealed = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select('destination_sealed')
      .where('id', '=', made.body.id)
      .executeTakeFirstOrThrow();
    expect(w.ctx.secrets.open(sealed.destination_sealed as string)).toContain('s3cret-token@');
  });

  it("I5: a RabbitMQ URL without credentials is refused (never RabbitMQ's guest/guest)", async () => {
    const bare = await create({ type: 'rabbitmq', url: 'amqps://127.0.0.1:5671/vh', exchange: 'shipments' });
    expectProblem(bare, 422, 'validation.failed');
    expect(bare.body.errors[0].path).toBe('/destination/url');
  });

  it('a plaintext broker inside the private allowlist stays allowed', async () => {
    const local = await create({ type: 'nats', url: 'nats://127.0.0.1:4222', subject: 'orders.local' });
    expect(local.status, local.text).toBe(201);
  });

  describe.skipIf(rabbitMissing !== null)('RabbitMQ behind TLS', () => {
    it('delivers a signed message over amqps://, verified by the consumer', async () => {
      if (!place || !front) throw new Error('RabbitMQ is set up when it is there');
      const consumer = await consumeQueue(place, 'tls-shipments', 'shipment.#');
      const url = `amqps://${place.user}:${place.password}@127.0.0.1:${front.port}/${place.vhost}`;
      const endpoint = await create(
        {
          type: 'rabbitmq',
          url,
          exchange: 'tls-shipments',
          routing_key: '{event_type}',
        },
        receiving,
      );
      expect(endpoint.status, endpoint.text).toBe(201);
      const sent = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.body.id}/test`, {
        token: receiving.liveToken,
        body: {},
      });
      expect(sent.status, sent.text).toBe(200);
      expect(sent.body.error, JSON.stringify(sent.body)).toBeNull();
      await expect.poll(() => consumer.received.length).toBe(1);
      const message = verifyConsumed(
        endpoint.body.secret,
        consumer.received[0] as never,
        w.clock.now(),
      ) as Json;
      expect(message.type).toBe('shipment.created');
      await consumer.close();
    });
  });

  describe.skipIf(natsMissing !== null)('NATS that requires TLS', () => {
    it('delivers over tls://, and the stream holds the signed message', async () => {
      if (!own) throw new Error('the NATS server is started when it can be');
      const server = own;
      const endpoint = await create(
        {
          type: 'nats',
          url: server.url,
          subject: `${server.stream.prefix}.{event_type}`,
        },
        receiving,
      );
      expect(endpoint.status, endpoint.text).toBe(201);
      const sent = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.body.id}/test`, {
        token: receiving.liveToken,
        body: {},
      });
      expect(sent.body.error, JSON.stringify(sent.body)).toBeNull();
      const stored = await server.stream.read();
      expect(stored).toHaveLength(1);
      const message = verifyConsumed(endpoint.body.secret, stored[0] as never, w.clock.now()) as Json;
      expect(message.type).toBe('shipment.created');
    });
  });
});
