/**
 * Messages per second to each destination kind, and the worker's CPU per delivery
 * (`npm run bench:destinations`, issue 43); never a test. One worker drains WAYBILL_BENCH_EVENTS
 * queued events (default 2,000) to one endpoint of each kind in turn: HTTPS (a receiver in a
 * thread of its own on 127.0.0.1), RabbitMQ (127.0.0.1:5672, a vhost of its own, one queue bound)
 * and NATS JetStream (127.0.0.1:4222, a stream of its own). The events are queued before the worker
 * starts, so only the drain is timed; the CPU is the main thread's (process.threadCpuUsage), where
 * the worker claims, signs, publishes and records (the brokers and the receiver's thread are not
 * in it). PostgreSQL, in a throwaway schema of WAYBILL_BENCH_DATABASE_URL.
 */

import amqp from 'amqplib';
import {
  type BrokerDestination,
  maskedBrokerUrl,
  sealDestination,
} from '../src/delivery/destinations/spec.ts';
import { startDeliveryWorker } from '../src/delivery/worker.ts';
import { randomBase62 } from '../src/lib/ids.ts';
import { natsMissing, natsStream, rabbitMqMissing, rabbitPlace } from '../test/delivery/brokers.ts';
import {
  addEndpoint,
  insertEvents,
  newTenant,
  openBenchContext,
  succeeded,
  throwawaySchema,
  waitFor,
} from './fixtures.ts';
import { startThreadReceiver } from './thread-receiver.ts';

const url = process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench';
const EVENTS = Number(process.env.WAYBILL_BENCH_EVENTS ?? 2_000);

interface Run {
  kind: string;
  perSecond: number;
  cpuUsPerDelivery: number;
}

/** Queues the events for an endpoint made by `target`, then times one worker's drain. */
async function drain(
  kind: string,
  target: (tenantId: string) => Promise<{ url: string; destination?: BrokerDestination }>,
): Promise<Run> {
  const schema = await throwawaySchema(url, 'dest');
  const { ctx, database } = await openBenchContext(schema.url, schema.name);
  try {
    const tenantId = await newTenant(ctx);
    const where = await target(tenantId);
    const endpointId = await addEndpoint(ctx, tenantId, where.url);
    if (where.destination)
      await ctx.db
        .updateTable('webhook_endpoints')
        .set({
          url: maskedBrokerUrl(where.destination.url),
          destination_sealed: sealDestination(ctx.secrets, where.destination),
        })
        .where('id', '=', endpointId)
        .execute();
    await insertEvents(ctx, tenantId, EVENTS, 500);
    const cpuBefore = process.threadCpuUsage();
    const started = performance.now();
    const worker = startDeliveryWorker(ctx, { pollMs: 50 });
    await waitFor(async () => (await succeeded(ctx, [endpointId])) >= EVENTS, 200);
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.threadCpuUsage(cpuBefore);
    await worker.stop();
    return { kind, perSecond: EVENTS / seconds, cpuUsPerDelivery: (cpu.user + cpu.system) / EVENTS };
  } finally {
    await database.close();
    await schema.drop();
  }
}

const runs: Run[] = [];
const receiver = await startThreadReceiver();
try {
  runs.push(await drain('https', async () => ({ url: receiver.url })));
} finally {
  await receiver.close();
}

const rabbitMissing = await rabbitMqMissing();
if (rabbitMissing) console.log(`rabbitmq: skipped (${rabbitMissing})`);
else {
  const place = await rabbitPlace();
  // A queue bound and left to fill: no consumer in this process (its CPU would count).
  const admin = await amqp.connect(place.url);
  const channel = await admin.createChannel();
  await channel.assertExchange('bench', 'topic', { durable: false });
  await channel.assertQueue('bench', { durable: false });
  await channel.bindQueue('bench', 'bench', '#');
  await admin.close();
  try {
    runs.push(
      await drain('rabbitmq', async () => ({
        url: '',
        destination: { type: 'rabbitmq', url: place.url, exchange: 'bench', routing_key: '{event_type}' },
      })),
    );
  } finally {
    await place.dispose();
  }
}

const jetStreamMissing = await natsMissing();
if (jetStreamMissing) console.log(`nats: skipped (${jetStreamMissing})`);
else {
  const stream = await natsStream();
  try {
    runs.push(
      await drain('nats', async () => ({
        url: '',
        destination: {
          type: 'nats',
          url: 'nats://127.0.0.1:4222',
          subject: `${stream.prefix}.${randomBase62(4)}`,
        },
      })),
    );
  } finally {
    await stream.dispose();
  }
}

console.log(`\n${EVENTS} events, one worker, PostgreSQL (${new URL(url).pathname.slice(1)})`);
console.log('kind      msg/s   worker CPU per delivery');
for (const run of runs)
  console.log(
    `${run.kind.padEnd(9)} ${run.perSecond.toFixed(0).padStart(6)}   ${run.cpuUsPerDelivery.toFixed(0)} µs`,
  );
console.log('(the machine is shared: 2 cores, other engineers running tests; figures are indicative)');
process.exit(0);
