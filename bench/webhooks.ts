/**
 * Webhook delivery benchmark (`npm run bench:webhooks`); never a test. PGlite by default,
 * PostgreSQL when WAYBILL_BENCH_DATABASE_URL is set (in a throwaway schema).
 * WAYBILL_BENCH_EVENTS scales the event count (default 20,000). One printed line per figure.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import pino from 'pino';
import { Agent, request } from 'undici';
import { buildContext } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { type AppContext, runAfterCommit } from '../src/context.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newSigningSecret } from '../src/lib/crypto.ts';
import { newId, newTenantId, randomBase62 } from '../src/lib/ids.ts';
import { recordEvents } from '../src/modules/shipments/events.ts';
import { signatureHeader } from '../src/modules/webhooks/signing.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../src/modules/webhooks/worker.ts';

const EVENTS = Number(process.env.WAYBILL_BENCH_EVENTS ?? 20_000);
const PER_ENDPOINT = 8;
const pgUrl = process.env.WAYBILL_BENCH_DATABASE_URL;

interface Sink {
  url: string;
  arrivals: Map<string, number>;
  server: Server;
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

async function receiver(): Promise<Sink> {
  const arrivals = new Map<string, number>();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.set(String(req.headers['webhook-id']), performance.now());
      res.end('ok');
    });
  });
  return { url: await listen(server), arrivals, server };
}

/** A receiver that takes the request and never answers. */
async function blackHole(): Promise<Sink> {
  const server = createServer((req) => req.resume());
  return { url: await listen(server), arrivals: new Map(), server };
}

function shipmentData(i: number) {
  return {
    status: 'in_transit',
    previous_status: 'picked_up',
    shipment: {
      id: newId('shp'),
      tracking_number: `WB${String(i).padStart(10, '0')}`,
      status: 'in_transit',
      external_ref: `order-${i}`,
      customer_account_id: null,
      recipient_name: 'Ada Lovelace',
      recipient_email: 'ada@example.com',
      recipient_phone: '+34600000000',
      payment_mode: 'cod',
      cod_amount_minor: 4599,
      currency: 'EUR',
      parcels: [{ weight_grams: 1200, length_mm: 300, width_mm: 200, height_mm: 100, reference: 'box-1' }],
      livemode: true,
      exception_reason: null,
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    },
  };
}

async function insertEvents(
  ctx: AppContext,
  tenantId: string,
  count: number,
  perTx: number,
): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < count; done += perTx) {
    const n = Math.min(perTx, count - done);
    await ctx.db.transaction().execute(async (trx) => {
      const stored = await recordEvents(
        ctx,
        trx,
        Array.from({ length: n }, (_, k) => ({
          type: 'shipment.status_changed',
          tenantId,
          livemode: true,
          data: shipmentData(done + k),
          createdAt: new Date(),
          customerAccountId: null,
        })),
      );
      ids.push(...stored.map((e) => e.id));
    });
    runAfterCommit(ctx);
  }
  return ids;
}

async function addEndpoint(ctx: AppContext, tenantId: string, url: string): Promise<string> {
  const id = newId('we');
  const now = new Date();
  await ctx.db
    .insertInto('webhook_endpoints')
    .values({
      id,
      tenant_id: tenantId,
      customer_account_id: null,
      installation_id: null,
      livemode: true,
      url,
      description: null,
      event_types: JSON.stringify(['shipment.status_changed']),
      enabled: true,
      disabled_reason: null,
      secret_sealed: ctx.secrets.seal(newSigningSecret()),
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      failing_since: null,
      kind: 'endpoint',
      app_id: null,
      held: false,
      created_by: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

async function waitFor(check: () => Promise<boolean> | boolean, everyMs = 20): Promise<void> {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, everyMs));
}

async function succeeded(ctx: AppContext, endpointId: string): Promise<number> {
  const row = await ctx.db
    .selectFrom('webhook_deliveries')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'succeeded')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function newTenant(ctx: AppContext): Promise<string> {
  const id = newTenantId();
  const now = new Date();
  await ctx.db
    .insertInto('companies')
    .values({ id, name: 'Bench', live: true, created_at: now, updated_at: now })
    .execute();
  return id;
}

/** Deliveries per second of a backlog of `count` events, from worker start to the last record. */
async function throughput(ctx: AppContext, sink: Sink, extraUrl: string | null, count: number) {
  const tenantId = await newTenant(ctx);
  const endpointId = await addEndpoint(ctx, tenantId, sink.url);
  if (extraUrl) await addEndpoint(ctx, tenantId, extraUrl);
  await insertEvents(ctx, tenantId, count, 500);
  const before = sink.arrivals.size;
  const started = performance.now();
  const worker = startDeliveryWorker(ctx, { perEndpoint: PER_ENDPOINT, pollMs: 200 });
  // Arrivals first (cheap), then the records: the figure counts both.
  await waitFor(() => sink.arrivals.size - before >= count, 10);
  await waitFor(async () => (await succeeded(ctx, endpointId)) === count, 10);
  const seconds = (performance.now() - started) / 1000;
  return { rate: count / seconds, worker };
}

/** The same signed bodies POSTed straight with undici, at the engine's concurrency to one endpoint. */
async function rawCeiling(url: string, count: number): Promise<number> {
  const secret = newSigningSecret();
  const bodies = Array.from({ length: count }, (_, i) =>
    JSON.stringify({ id: `evt_${i}`, data: shipmentData(i) }),
  );
  const agent = new Agent({ connections: PER_ENDPOINT });
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: PER_ENDPOINT }, async () => {
      while (next < count) {
        const i = next++;
        const body = bodies[i] as string;
        const id = `raw_${randomBase62(10)}_${i}`;
        const ts = Math.floor(Date.now() / 1000);
        const response = await request(url, {
          method: 'POST',
          dispatcher: agent,
          body,
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': String(ts),
            'webhook-signature': signatureHeader([secret], id, ts, body),
            'webhook-event': 'shipment.status_changed',
          },
        });
        await response.body.text();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  return count / seconds;
}

/** Commit-to-arrival latency while events are committed one per transaction at `rate` per second. */
async function latency(ctx: AppContext, sink: Sink, rate: number, seconds: number) {
  const tenantId = await newTenant(ctx);
  await addEndpoint(ctx, tenantId, sink.url);
  const worker = startDeliveryWorker(ctx, { perEndpoint: PER_ENDPOINT });
  const committed = new Map<string, number>();
  const total = rate * seconds;
  const started = performance.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const [id] = await insertEvents(ctx, tenantId, 1, 1);
    committed.set(id as string, performance.now());
  }
  await waitFor(() => [...committed.keys()].every((id) => sink.arrivals.has(id)));
  await worker.stop();
  const latencies = [...committed]
    .map(([id, at]) => (sink.arrivals.get(id) as number) - at)
    .sort((a, b) => a - b);
  const pct = (p: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? 0;
  return { p50: pct(50), p99: pct(99), count: latencies.length };
}

async function main() {
  let schema: string | null = null;
  if (pgUrl) {
    schema = `bench_${randomBase62(8).toLowerCase()}`;
    const admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.end();
  }
  const config = loadConfig({
    WAYBILL_DATABASE_URL: pgUrl ?? 'memory:',
    WAYBILL_SECRET_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
    WAYBILL_DEMO: '0',
    WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
  });
  const database = await openDatabase(config, { ...(schema ? { schema, poolSize: 10 } : {}) });
  await migrateToLatest(database.db);
  const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
  const engine = pgUrl ? 'postgresql' : 'pglite';
  const sink = await receiver();
  const hole = await blackHole();
  const workers: DeliveryWorker[] = [];
  try {
    const raw = await rawCeiling(sink.url, EVENTS);
    const a = await throughput(ctx, sink, null, EVENTS);
    workers.push(a.worker);
    await a.worker.stop();
    console.log(
      `[${engine}] (a) throughput: ${a.rate.toFixed(0)} deliveries/s through the engine vs raw ceiling ${raw.toFixed(0)} req/s (${((a.rate / raw) * 100).toFixed(1)}%), ${EVENTS} events, concurrency ${PER_ENDPOINT}`,
    );
    const b = await latency(ctx, sink, 200, 10);
    console.log(
      `[${engine}] (b) commit-to-arrival latency at 200 events/s: p50 ${b.p50.toFixed(1)} ms, p99 ${b.p99.toFixed(1)} ms (${b.count} events)`,
    );
    // Alone and beside the black hole, alternated twice, best of each: the machine is shared.
    const fairCount = Math.min(EVENTS, 5000);
    let alone = 0;
    let beside = 0;
    for (let round = 0; round < 2; round++) {
      const solo = await throughput(ctx, sink, null, fairCount);
      await solo.worker.stop();
      alone = Math.max(alone, solo.rate);
      const shared = await throughput(ctx, sink, hole.url, fairCount);
      beside = Math.max(beside, shared.rate);
      hole.server.closeAllConnections();
      await shared.worker.stop();
      // The black hole's deliveries wait for retries; they must not weigh on the next round.
      await ctx.db
        .updateTable('webhook_deliveries')
        .set({ status: 'cancelled' })
        .where('status', '=', 'pending')
        .execute();
    }
    const drop = (1 - beside / alone) * 100;
    console.log(
      `[${engine}] (c) fairness: ${beside.toFixed(0)} deliveries/s beside an endpoint that never answers vs ${alone.toFixed(0)} alone (drop ${drop.toFixed(1)}%, target <= 10%; ${fairCount} events, best of 2)`,
    );
    console.log(
      `[${engine}] (d) peak RSS of the worker process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB (receivers${pgUrl ? '' : ' and the embedded database'} in the same process)`,
    );
  } finally {
    sink.server.closeAllConnections();
    sink.server.close();
    hole.server.closeAllConnections();
    hole.server.close();
    await database.close();
    if (schema && pgUrl) {
      const admin = new pg.Client({ connectionString: pgUrl });
      await admin.connect();
      await admin.query(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
