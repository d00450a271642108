import { createRequire } from 'node:module';
import { createServer, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { attemptsOf, deliveriesOf, testWorker } from './support.ts';

/**
 * The security review's findings M1 and M2 (issue 50): a company's broker that never answers, sends
 * an endless first line, floods a link, or announces a frame or a body of any size. Each server here
 * is one a company could run; what the tests hold is that the attempt fails and Waybill closes the
 * socket, so the flood stops (before the fix each of these left the socket open and the server
 * sending, and the tests waited for a close that never came).
 */

// amqplib's own frame encoder (not exported by the package): the hostile server speaks real AMQP.
const amqpDefs = createRequire(import.meta.url)(
  `${createRequire(import.meta.url)
    .resolve('amqplib')
    .replace(/channel_api\.js$/, '')}lib/defs.js`,
) as {
  encodeMethod(id: number, channel: number, fields: Record<string, unknown>): Buffer;
  encodeProperties(id: number, channel: number, size: number, fields: Record<string, unknown>): Buffer;
  [name: string]: unknown;
};
const METHOD = (name: string) => amqpDefs[name] as number;

type Hostile = { port: number; closed: Promise<void>[]; stop(): Promise<void> };

async function hostileServer(onSocket: (socket: Socket) => void): Promise<Hostile> {
  const sockets: Socket[] = [];
  const closed: Promise<void>[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    closed.push(new Promise<void>((resolve) => socket.once('close', () => resolve())));
    socket.on('error', () => {});
    onSocket(socket);
    // Read whatever comes, so that the client's close reaches the server as an end.
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    closed,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Writes `chunk` for as long as the peer takes it, until the socket closes. */
function flood(socket: Socket, chunk: Buffer): void {
  const write = () => {
    while (!socket.destroyed && socket.write(chunk)) {}
  };
  socket.on('drain', write);
  write();
}

async function attemptOnce(w: TestWaybill, destination: Record<string, unknown>): Promise<Json> {
  const company = await createCompany(w);
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token: company.liveToken,
    body: { destination, event_types: ['shipment.created'] },
  });
  expect(created.status, created.text).toBe(201);
  await createShipment(w, company.liveToken);
  const worker = testWorker(w, { deadlineMs: 500 });
  try {
    await worker.tick();
  } finally {
    await worker.stop();
  }
  const [delivery] = await deliveriesOf(w, created.body.id);
  expect(delivery).toMatchObject({ status: 'pending', attempt_count: 1 });
  const [attempt] = await attemptsOf(w, delivery?.id as string);
  expect(attempt?.error).not.toBeNull();
  return attempt as Json;
}

const natsAt = (port: number) => ({ type: 'nats', url: `nats://127.0.0.1:${port}`, subject: 'x' });
const rabbitAt = (port: number) => ({
  type: 'rabbitmq',
  url: `amqp://u:secret-pw@127.0.0.1:${port}/v`,
  exchange: 'x',
  routing_key: 'y',
});

const INFO_LINE = `INFO ${JSON.stringify({
  server_id: 'hostile',
  version: '2.10.0',
  proto: 1,
  max_payload: 1048576,
  headers: true,
  jetstream: true,
})}\r\n`;

describe('a hostile broker costs one attempt and its socket is closed (findings M1, M2)', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  /** One attempt against the hostile server; then every socket it accepted must have been closed. */
  async function oneAttemptThenClosed(server: Hostile, destination: Record<string, unknown>): Promise<Json> {
    try {
      const attempt = await attemptOnce(w, destination);
      expect(server.closed.length).toBeGreaterThan(0);
      await Promise.all(server.closed);
      return attempt;
    } finally {
      await server.stop();
    }
  }

  it('M1: a NATS server that sends an endless first line', async () => {
    const server = await hostileServer((socket) => {
      socket.write('INFO {"server_id":"');
      flood(socket, Buffer.alloc(64 * 1024, 'a'));
    });
    const attempt = await oneAttemptThenClosed(server, natsAt(server.port));
    expect(['connection_failed', 'timeout']).toContain(attempt.error);
  });

  it.each([
    ['says INFO and then never answers', (socket: Socket) => void socket.write(INFO_LINE)],
    ['never sends a byte', () => {}],
  ])('M1: a NATS server that %s', async (_, onSocket) => {
    const server = await hostileServer(onSocket);
    const attempt = await oneAttemptThenClosed(server, natsAt(server.port));
    expect(attempt.error).toBe('timeout');
  });

  it('M1: a NATS server that connects and then floods the link without end', async () => {
    const server = await hostileServer((socket) => {
      socket.write(INFO_LINE);
      let flooding = false;
      socket.on('data', (data: Buffer) => {
        if (flooding) return;
        if (data.includes('PING\r\n')) socket.write('PONG\r\n');
        if (data.includes('PUB ') || data.includes('HPUB ')) {
          flooding = true;
          socket.write('MSG _INBOX.x 1 ');
          flood(socket, Buffer.alloc(64 * 1024, '9'));
        }
      });
    });
    await oneAttemptThenClosed(server, natsAt(server.port));
  });

  it('M2: a RabbitMQ server that announces a 4 GB frame', async () => {
    const server = await hostileServer((socket) => {
      socket.once('data', () => {
        socket.write(Buffer.from([1, 0, 0, 0xff, 0xff, 0xff, 0xff]));
        flood(socket, Buffer.alloc(64 * 1024));
      });
    });
    await oneAttemptThenClosed(server, rabbitAt(server.port));
  });

  it('M2: a RabbitMQ server that returns a message announcing a 2^40-byte body', async () => {
    const server = await hostileServer((socket) => {
      let pending = Buffer.alloc(0);
      let headerSeen = false;
      const reply = (frame: Buffer) => socket.write(frame);
      socket.on('data', (data: Buffer) => {
        pending = Buffer.concat([pending, data]);
        if (!headerSeen) {
          if (pending.length < 8) return;
          headerSeen = true;
          pending = pending.subarray(8);
          reply(
            amqpDefs.encodeMethod(METHOD('ConnectionStart'), 0, {
              versionMajor: 0,
              versionMinor: 9,
              serverProperties: {},
              mechanisms: Buffer.from('PLAIN'),
              locales: Buffer.from('en_US'),
            }),
          );
        }
        while (pending.length >= 7) {
          const size = pending.readUInt32BE(3);
          if (pending.length < 8 + size) return;
          const type = pending.readUInt8(0);
          const channel = pending.readUInt16BE(1);
          const method = type === 1 ? pending.readUInt32BE(7) : 0;
          pending = pending.subarray(8 + size);
          if (method === METHOD('ConnectionStartOk'))
            reply(
              amqpDefs.encodeMethod(METHOD('ConnectionTune'), 0, {
                channelMax: 0,
                frameMax: 131072,
                heartbeat: 0,
              }),
            );
          else if (method === METHOD('ConnectionOpen'))
            reply(amqpDefs.encodeMethod(METHOD('ConnectionOpenOk'), 0, { knownHosts: '' }));
          else if (method === METHOD('ChannelOpen'))
            reply(amqpDefs.encodeMethod(METHOD('ChannelOpenOk'), channel, { channelId: Buffer.alloc(0) }));
          else if (method === METHOD('ConfirmSelect'))
            reply(amqpDefs.encodeMethod(METHOD('ConfirmSelectOk'), channel, {}));
          else if (method === METHOD('BasicPublish')) {
            reply(
              amqpDefs.encodeMethod(METHOD('BasicReturn'), channel, {
                replyCode: 312,
                replyText: 'NO_ROUTE',
                exchange: 'x',
                routingKey: 'y',
              }),
            );
            reply(amqpDefs.encodeProperties(METHOD('BasicProperties'), channel, 2 ** 40, {}));
            const body = Buffer.alloc(8 + 131064);
            body.writeUInt8(3, 0);
            body.writeUInt16BE(channel, 1);
            body.writeUInt32BE(131064, 3);
            body.writeUInt8(0xce, 7 + 131064);
            flood(socket, body);
            return;
          }
        }
      });
    });
    await oneAttemptThenClosed(server, rabbitAt(server.port));
  });
});
