import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer as createNetServer, connect as tcpConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { type ConnectionOptions, type NatsConnection, connect as natsConnect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import pino, { type Logger } from 'pino';
import { Webhook } from 'standardwebhooks';
import { randomBase62 } from '../../src/lib/ids.ts';
import type { TlsFiles } from '../support/certificate.ts';

/**
 * The real brokers on this machine (issue 43): RabbitMQ on 127.0.0.1:5672 (managed with
 * rabbitmqctl: a vhost and a user per test file) and NATS with JetStream on 127.0.0.1:4222 (a
 * stream per test). Tests skip, saying why, when one is not there.
 */
export const RABBIT_PORT = 5672;
export const NATS_PORT = 4222;

const run = promisify(execFile);

function reachable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: '127.0.0.1', port, timeout: 1000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

async function rabbitmqctl(...args: string[]): Promise<void> {
  await run('rabbitmqctl', ['-q', ...args], { timeout: 30_000 });
}

/** A logger at every level whose lines are kept, to show a broker's password is in none of them. */
export function capturedLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino(
    { level: 'trace' },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );
  return { logger, lines };
}

/** Whether RabbitMQ answers on 5672 and rabbitmqctl can manage it; the reason when not. */
export async function rabbitMqMissing(): Promise<string | null> {
  if (!(await reachable(RABBIT_PORT))) return 'RabbitMQ is not reachable on 127.0.0.1:5672';
  try {
    await rabbitmqctl('list_vhosts');
  } catch {
    return 'rabbitmqctl cannot manage the RabbitMQ on 127.0.0.1 (it needs root)';
  }
  return null;
}

export async function natsMissing(): Promise<string | null> {
  if (!(await reachable(NATS_PORT))) return 'NATS is not reachable on 127.0.0.1:4222';
  try {
    const nc = await natsConnect({ servers: `127.0.0.1:${NATS_PORT}`, timeout: 2000 });
    try {
      await jetstreamManager(nc);
    } finally {
      await nc.close();
    }
  } catch {
    return 'NATS on 127.0.0.1:4222 has no JetStream';
  }
  return null;
}

/** A vhost and a user of this test file's own, with a password no other text contains. */
export interface RabbitPlace {
  vhost: string;
  user: string;
  password: string;
  url: string;
  /** Removes the vhost (its exchanges and queues go with it): the broker "goes away". */
  removeVhost(): Promise<void>;
  /** Makes the vhost again, with the user's permissions. */
  addVhost(): Promise<void>;
  dispose(): Promise<void>;
}

export async function rabbitPlace(): Promise<RabbitPlace> {
  const suffix = randomBase62(10).toLowerCase();
  const vhost = `waybill-test-${suffix}`;
  const user = `waybill-${suffix}`;
  const password = `pw-${randomBase62(24)}`;
  const addVhost = async () => {
    await rabbitmqctl('add_vhost', vhost);
    await rabbitmqctl('set_permissions', '-p', vhost, user, '.*', '.*', '.*');
  };
  await rabbitmqctl('add_user', user, password);
  await addVhost();
  return {
    vhost,
    user,
    password,
    url: `amqp://${user}:${password}@127.0.0.1:${RABBIT_PORT}/${vhost}`,
    removeVhost: () => rabbitmqctl('delete_vhost', vhost),
    addVhost,
    async dispose() {
      await rabbitmqctl('delete_vhost', vhost).catch(() => {});
      await rabbitmqctl('delete_user', user).catch(() => {});
    },
  };
}

/** A message as a consumer got it: the body, and the headers a Standard Webhooks receiver reads. */
export interface Consumed {
  body: string;
  headers: Record<string, string>;
  /** AMQP message_id, or JetStream's Nats-Msg-Id. */
  messageId: string;
}

export function verifyConsumed(secret: string, message: Consumed, at: Date): unknown {
  const realNow = Date.now;
  Date.now = () => at.getTime();
  try {
    return new Webhook(secret).verify(message.body, {
      'webhook-id': message.headers['webhook-id'] ?? '',
      'webhook-timestamp': message.headers['webhook-timestamp'] ?? '',
      'webhook-signature': message.headers['webhook-signature'] ?? '',
    });
  } finally {
    Date.now = realNow;
  }
}

/** A queue bound to a topic exchange in the place's vhost, and what it consumed. */
export interface QueueConsumer {
  received: Consumed[];
  close(): Promise<void>;
}

export async function consumeQueue(
  place: RabbitPlace,
  exchange: string,
  bindingKey: string,
): Promise<QueueConsumer> {
  const connection = await amqp.connect(place.url);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: false });
  const { queue } = await channel.assertQueue('', { exclusive: true });
  await channel.bindQueue(queue, exchange, bindingKey);
  const received: Consumed[] = [];
  await channel.consume(
    queue,
    (message) => {
      if (!message) return;
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(message.properties.headers ?? {}))
        headers[name] = String(value);
      received.push({
        body: message.content.toString('utf8'),
        headers,
        messageId: String(message.properties.messageId),
      });
    },
    { noAck: true },
  );
  // The connection dies with its vhost; close() must still answer.
  connection.on('error', () => {});
  return {
    received,
    close: () => connection.close().catch(() => {}),
  };
}

/** Declares an exchange with no queue bound to it (messages to it route nowhere). */
export async function declareExchange(place: RabbitPlace, exchange: string): Promise<void> {
  const connection = await amqp.connect(place.url);
  const channel = await connection.createChannel();
  await channel.assertExchange(exchange, 'topic', { durable: false });
  await connection.close();
}

/** A JetStream stream over `<prefix>.>` of this test's own, and a way to read it whole. */
export interface NatsStream {
  name: string;
  prefix: string;
  read(): Promise<Consumed[]>;
  remove(): Promise<void>;
  add(): Promise<void>;
  dispose(): Promise<void>;
}

export async function natsStream(
  server: ConnectionOptions = { servers: `127.0.0.1:${NATS_PORT}` },
): Promise<NatsStream> {
  const suffix = randomBase62(10);
  const name = `WAYBILL_TEST_${suffix}`;
  const prefix = `waybill.test.${suffix}`;
  const nc: NatsConnection = await natsConnect(server);
  const manager = await jetstreamManager(nc);
  const add = async () => {
    await manager.streams.add({ name, subjects: [`${prefix}.>`], duplicate_window: 120_000_000_000 });
  };
  await add();
  return {
    name,
    prefix,
    async read() {
      // A connection of its own: the kept one may still be finding a restarted server again.
      const reader = await natsConnect({ ...server, maxReconnectAttempts: 0 });
      try {
        const info = await (await jetstreamManager(reader)).streams.info(name);
        const out: Consumed[] = [];
        const js = jetstream(reader);
        for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
          const message = await js.streams.get(name).then((s) => s.getMessage({ seq }));
          if (!message) continue;
          const headers: Record<string, string> = {};
          for (const [key] of message.header ?? []) headers[key.toLowerCase()] = message.header.get(key);
          out.push({ body: message.string(), headers, messageId: message.header.get('Nats-Msg-Id') });
        }
        return out;
      } finally {
        await reader.close();
      }
    },
    remove: async () => {
      await manager.streams.delete(name);
    },
    add,
    async dispose() {
      await manager.streams.delete(name).catch(() => {});
      await nc.close();
    },
  };
}

/** A free TCP port on 127.0.0.1 (taken and given back at once). */
async function freePort(): Promise<number> {
  const server = createNetServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function untilReachable(port: number): Promise<void> {
  for (let tries = 0; tries < 200; tries++) {
    if (await reachable(port)) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`nats-server did not listen on ${port}`);
}

/**
 * A NATS server with JetStream that the test owns (a child process on free ports, its store in a
 * directory of its own, a user and password), so the test can stop and start it; its monitoring
 * endpoint shows the connections it has.
 */
export interface OwnNatsServer {
  /** nats://u:<password>@127.0.0.1:<port> */
  url: string;
  password: string;
  /** A JetStream stream over `<prefix>.>` on this server (file storage: it outlives a restart). */
  stream: NatsStream;
  /** The clients connected now (their name and connection id), from the server's own /connz. */
  clients(): Promise<Array<{ name: string; cid: number }>>;
  stop(): Promise<void>;
  start(): Promise<void>;
  dispose(): Promise<void>;
}

export const NATS_SERVER_BINARY = '/usr/sbin/nats-server';

export async function natsServerMissing(): Promise<string | null> {
  try {
    await run(NATS_SERVER_BINARY, ['--version'], { timeout: 10_000 });
    return null;
  } catch {
    return `${NATS_SERVER_BINARY} cannot be run`;
  }
}

export async function ownNatsServer(options: { tls?: TlsFiles } = {}): Promise<OwnNatsServer> {
  const [port, monitorPort] = [await freePort(), await freePort()];
  const storeDir = await mkdtemp(join(tmpdir(), 'waybill-nats-'));
  const password = `pw-${randomBase62(24)}`;
  let child: ChildProcess | null = null;
  const start = async () => {
    const args = ['-a', '127.0.0.1', '-p', String(port), '-m', String(monitorPort), '-js', '-sd', storeDir];
    if (options.tls) args.push('--tls', '--tlscert', options.tls.certFile, '--tlskey', options.tls.keyFile);
    child = spawn(NATS_SERVER_BINARY, [...args, '--user', 'u', '--pass', password], { stdio: 'ignore' });
    await untilReachable(port);
    await untilReachable(monitorPort);
  };
  const stop = async () => {
    const running = child;
    child = null;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
    running.kill('SIGTERM');
    await exited;
  };
  await start();
  const url = `${options.tls ? 'tls' : 'nats'}://u:${password}@127.0.0.1:${port}`;
  let stream: NatsStream;
  try {
    // The test's own connection comes back soon after a restart.
    stream = await natsStream({
      servers: `127.0.0.1:${port}`,
      ...(options.tls ? { tls: { ca: options.tls.cert } } : {}),
      user: 'u',
      pass: password,
      name: 'waybill-test',
      maxReconnectAttempts: -1,
      reconnectTimeWait: 50,
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    password,
    stream,
    async clients() {
      const answer = await fetch(`http://127.0.0.1:${monitorPort}/connz`);
      const connz = (await answer.json()) as { connections?: Array<{ name?: string; cid: number }> };
      return (connz.connections ?? []).map((c) => ({ name: c.name ?? '', cid: c.cid }));
    },
    stop,
    start,
    async dispose() {
      await stream.dispose().catch(() => {});
      await stop();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}
