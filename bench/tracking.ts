/**
 * Tracking's speed (issue 51 item 7, `npm run bench:tracking`); a benchmark, never a test. One run
 * prints, each beside the same run's single-version figure:
 *
 * 1. Inbound checkpoints applied a second from a carrier sending signed batches of 100 over HTTP
 *    (bench/inbound.ts's measureInbound: a whole Waybill, 4 batches in flight), on PostgreSQL and
 *    on PGlite, with the fan-out's two endpoints on one version and with one on each version.
 *    Goal: >= 2,000 a second on PostgreSQL (the round of moves: each checkpoint a status move with
 *    its events). On PostgreSQL also the statements a message of 100 runs, by shape
 *    (bench/statement-meter.ts): the profile the set-wise apply was made from.
 * 2. The fan-out's and the drain's cost per message delivered when half the endpoints are pinned
 *    to 2026-12-01 (each event's second envelope built once and written to their deliveries)
 *    against all on 2026-11-01, and all on 2026-12-01. Goal: mixed <= 1.2x the single version.
 *
 *   WAYBILL_BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench npm run bench:tracking
 * Each part starts with a smaller run it does not count (the JIT, the first connections).
 * BENCH_TRACKING_PGLITE=0 leaves PGlite out; BENCH_TRACKING_EVENTS (1,000 on PostgreSQL, 300 on
 * PGlite) and BENCH_TRACKING_ENDPOINTS (10) size part 2; BENCH_INBOUND_SHIPMENTS (2,000) part 1.
 */
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { type AppContext, runAfterCommit } from '../src/context.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { startDeliveryWorker } from '../src/delivery/worker.ts';
import { systemClock } from '../src/lib/clock.ts';
import { recordEvents } from '../src/modules/shipments/events.ts';
import { buildContext } from '../src/services.ts';
import {
  addEndpoint,
  BENCH_SECRET_KEY,
  newTenant,
  receiver,
  type Sink,
  succeeded,
  throwawaySchema,
  waitFor,
} from './fixtures.ts';
import { type InboundFigures, measureInbound } from './inbound.ts';
import { shipmentData } from './message.ts';
import { StatementMeter, type StatementShape } from './statement-meter.ts';

type Version = '2026-11-01' | '2026-12-01';
const postgresUrl = process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench';
const withPglite = process.env.BENCH_TRACKING_PGLITE !== '0';
const SHIPMENTS = Number(process.env.BENCH_INBOUND_SHIPMENTS ?? 2000);
const ENDPOINTS = Number(process.env.BENCH_TRACKING_ENDPOINTS ?? 10);
const INBOUND_GOAL = 2000;
const MIXED_GOAL = 1.2;

const rate = (n: number) => `${n.toFixed(0).padStart(6)}/s`;
const ratio = (mixed: number, single: number) => `${(mixed / single).toFixed(2)}x`;
const verdict = (pass: boolean) => (pass ? 'PASS' : 'MISS');

/** Part 1 on one engine: two endpoints on one version, then one on each. */
async function inbound(databaseUrl: string, shipments: number) {
  const meter = databaseUrl.startsWith('postgres') ? new StatementMeter() : null;
  let shapes: StatementShape[] = [];
  let messages = 1;
  const run = (endpoints: Version[], metered: boolean): Promise<InboundFigures> =>
    measureInbound({
      databaseUrl,
      shipments,
      endpoints,
      ...(meter && metered
        ? {
            meter: {
              start: () => meter.start(),
              stop: (n: number) => {
                shapes = meter.stop();
                messages = n;
              },
            },
          }
        : {}),
    });
  // A small run first, measured by nobody: the first one in a process pays for the JIT and the
  // first connections, and would count against whichever shape came first.
  await measureInbound({ databaseUrl, shipments: 300, rounds: 2 });
  const single = await run(['2026-11-01', '2026-11-01'], true);
  const mixed = await run(['2026-11-01', '2026-12-01'], false);
  return { single, mixed, shapes, messages };
}

function printInbound(result: Awaited<ReturnType<typeof inbound>>, goal: boolean): void {
  const { single, mixed } = result;
  console.log(`${single.label}: ${single.shipments} shipments, batches of 100, ${single.inFlight} in flight`);
  console.log('  checkpoints applied        endpoints on one version   one on each (mixed)');
  const line = (name: string, a: number, b: number, extra = '') =>
    console.log(`  ${name.padEnd(26)} ${rate(a).padEnd(26)} ${rate(b)}  ${ratio(b, a)}${extra}`);
  line(
    'each a move (events)',
    single.moves,
    mixed.moves,
    goal ? `   goal >= ${INBOUND_GOAL}: ${verdict(Math.min(single.moves, mixed.moves) >= INBOUND_GOAL)}` : '',
  );
  line('timeline only (no move)', single.timeline, mixed.timeline);
  line('the route alone (unmatched)', single.route, mixed.route);
  if (result.shapes.length > 0) {
    const total = result.shapes.reduce((sum, s) => sum + s.count, 0);
    console.log(`  statements a message of 100 moves: ${(total / result.messages).toFixed(1)}`);
    for (const shape of result.shapes) {
      console.log(
        `    ${(shape.count / result.messages).toFixed(1).padStart(5)}  ${shape.shape.padEnd(36)} ${(shape.ms / shape.count).toFixed(1)} ms each`,
      );
    }
  }
}

interface FanOutFigures {
  deliveries: number;
  /** µs of wall time per delivery made: recording the events (with their fan-out). */
  fanOutUs: number;
  /** µs per delivery delivered: the worker's drain, from its start to the last record. */
  drainUs: number;
}

/** Part 2, one shape: `events` status events to `versions.length` endpoints, recorded, then drained. */
async function fanOutAndDrain(
  ctx: AppContext,
  sink: Sink,
  versions: readonly Version[],
  events: number,
): Promise<FanOutFigures> {
  const tenantId = await newTenant(ctx);
  const endpointIds: string[] = [];
  for (const api_version of versions)
    endpointIds.push(await addEndpoint(ctx, tenantId, sink.url, { api_version }));
  const perTx = 100;
  const recordStarted = performance.now();
  for (let done = 0; done < events; done += perTx) {
    const n = Math.min(perTx, events - done);
    await ctx.db.transaction().execute((trx) =>
      recordEvents(
        ctx,
        trx,
        Array.from({ length: n }, (_, k) => {
          const data = shipmentData(done + k);
          return {
            type: 'shipment.status_changed',
            tenantId,
            livemode: true,
            customerAccountId: null,
            createdAt: new Date(),
            data,
            // 2026-12-01's data: the tracked shipment and the checkpoint behind the move.
            latest: {
              ...data,
              shipment: { ...data.shipment, carrier: null, sub_status: null, latest_checkpoint: null },
              checkpoint: null,
            },
          };
        }),
      ),
    );
    runAfterCommit(ctx);
  }
  const recordSeconds = (performance.now() - recordStarted) / 1000;
  const expected = events * versions.length;
  const before = sink.received.count;
  const drainStarted = performance.now();
  const worker = startDeliveryWorker(ctx, { pollMs: 200 });
  await waitFor(() => sink.received.count - before >= expected, 10);
  await waitFor(async () => (await succeeded(ctx, endpointIds)) === expected, 10);
  const drainSeconds = (performance.now() - drainStarted) / 1000;
  await worker.stop();
  return {
    deliveries: expected,
    fanOutUs: (recordSeconds * 1e6) / expected,
    drainUs: (drainSeconds * 1e6) / expected,
  };
}

/** Part 2 on one engine: each shape twice, alternating, the better of the two kept. */
async function versions(databaseUrl: string, events: number): Promise<void> {
  const onPostgres = databaseUrl.startsWith('postgres');
  const schema = onPostgres ? await throwawaySchema(databaseUrl, 'bench_tracking') : null;
  const config = loadConfig({
    WAYBILL_DATABASE_URL: databaseUrl,
    WAYBILL_SECRET_KEY: BENCH_SECRET_KEY,
    WAYBILL_DEMO: '0',
    WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
  });
  const database = await openDatabase(config, schema ? { schema: schema.name, poolSize: 10 } : {});
  const sink = await receiver();
  try {
    await migrateToLatest(database.db);
    const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
    const half = Math.floor(ENDPOINTS / 2);
    const shapes: Array<[string, Version[]]> = [
      ['all on 2026-11-01', Array.from({ length: ENDPOINTS }, () => '2026-11-01')],
      ['all on 2026-12-01', Array.from({ length: ENDPOINTS }, () => '2026-12-01')],
      [
        'half on each (mixed)',
        Array.from({ length: ENDPOINTS }, (_, i) => (i < half ? '2026-11-01' : '2026-12-01')),
      ],
    ];
    // Unmeasured, as in part 1: the first shape would pay for the warm-up.
    await fanOutAndDrain(ctx, sink, shapes[0]?.[1] ?? [], Math.ceil(events / 5));
    const best = new Map<string, FanOutFigures>();
    for (let round = 0; round < 2; round++) {
      for (const [name, pinned] of shapes) {
        const figures = await fanOutAndDrain(ctx, sink, pinned, events);
        const kept = best.get(name);
        best.set(name, {
          deliveries: figures.deliveries,
          fanOutUs: Math.min(figures.fanOutUs, kept?.fanOutUs ?? Number.POSITIVE_INFINITY),
          drainUs: Math.min(figures.drainUs, kept?.drainUs ?? Number.POSITIVE_INFINITY),
        });
      }
    }
    console.log(
      `${onPostgres ? 'PostgreSQL' : 'PGlite'}: ${events} status events to ${ENDPOINTS} endpoints (${events * ENDPOINTS} deliveries a shape, best of 2)`,
    );
    console.log('  per message delivered      fan-out        drain');
    const single = best.get('all on 2026-11-01') as FanOutFigures;
    for (const [name] of shapes) {
      const f = best.get(name) as FanOutFigures;
      const vs =
        name === 'all on 2026-11-01'
          ? ''
          : `   ${ratio(f.fanOutUs, single.fanOutUs)} / ${ratio(f.drainUs, single.drainUs)} of 2026-11-01`;
      console.log(
        `  ${name.padEnd(26)} ${`${f.fanOutUs.toFixed(0)} µs`.padStart(8)}   ${`${f.drainUs.toFixed(0)} µs`.padStart(8)}${vs}`,
      );
    }
    const mixed = best.get('half on each (mixed)') as FanOutFigures;
    const worstSingle = (key: 'fanOutUs' | 'drainUs') => single[key];
    console.log(
      `  goal mixed <= ${MIXED_GOAL}x one version: fan-out ${verdict(mixed.fanOutUs <= MIXED_GOAL * worstSingle('fanOutUs'))}, drain ${verdict(mixed.drainUs <= MIXED_GOAL * worstSingle('drainUs'))}`,
    );
  } finally {
    sink.server.closeAllConnections();
    await new Promise<void>((resolve) => sink.server.close(() => resolve()));
    await database.close();
    await schema?.drop();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  console.log('1. Inbound: a carrier sending signed batches of 100');
  printInbound(await inbound(postgresUrl, SHIPMENTS), true);
  if (withPglite) printInbound(await inbound('memory:', Math.min(SHIPMENTS, 1000)), false);
  console.log('2. The fan-out and the drain with endpoints on two versions');
  await versions(postgresUrl, Number(process.env.BENCH_TRACKING_EVENTS ?? 1000));
  if (withPglite) await versions('memory:', Number(process.env.BENCH_TRACKING_EVENTS ?? 300));
  console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`);
}

await main();
