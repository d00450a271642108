/**
 * The receiver's delivery controls under load (issue 23 item 8), a part of `npm run bench:webhooks`:
 *
 * (g) a rate-limited endpoint's backlog drained beside an unlimited endpoint's, with one and with
 *     two workers (on PostgreSQL each its own process, bench/worker-process.ts; on the embedded
 *     engine, which one process holds, two in this process): the limited one's arrivals in the
 *     busiest sliding second and on average, and the unlimited one's rate against running alone;
 * (h) an ordered endpoint's backlog of 1,000 shipments of 5 events each against the same messages
 *     to an endpoint without ordering: the rates, and the arrivals out of their shipment's order.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createServer } from 'node:http';
import { type AppContext, runAfterCommit } from '../src/context.ts';
import { startDeliveryWorker } from '../src/delivery/worker.ts';
import { newId } from '../src/lib/ids.ts';
import { recordEvents } from '../src/modules/shipments/events.ts';
import { addEndpoint, insertEvents, listen, newTenant, tellAll, waitFor } from './fixtures.ts';
import { shipmentData } from './message.ts';
import { startThreadReceiver } from './thread-receiver.ts';

const LIMIT = Number(process.env.WAYBILL_BENCH_RATE_LIMIT ?? 200);
/** Seconds of the limited endpoint's backlog. */
const LIMITED_SECONDS = 10;
const UNLIMITED_EVENTS = Number(process.env.WAYBILL_BENCH_UNLIMITED_EVENTS ?? 20_000);
const SHIPMENTS = 1_000;
const EVENTS_PER_SHIPMENT = 5;

/** Where the workers run: this process's context, and on PostgreSQL the database for processes of their own. */
export interface ControlsSetting {
  ctx: AppContext;
  engine: string;
  /** PostgreSQL: the URL and schema a worker process opens; null on the embedded engine. */
  processes: { url: string; schema: string } | null;
}

/** One receiver, a path per endpoint: arrival times, and for shipments the order they came in. */
async function pathReceiver() {
  const arrivals = new Map<string, number[]>();
  /** Per path and shipment, the last step that arrived. */
  const lastStep = new Map<string, Map<string, number>>();
  const outOfOrder = new Map<string, number>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      const at = performance.now();
      const times = arrivals.get(path) ?? [];
      arrivals.set(path, times);
      times.push(at);
      if (path.startsWith('/lines')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        const shipment: string = body.data.shipment.id;
        const step = Number(String(body.data.shipment.external_ref).slice('step-'.length));
        const steps = lastStep.get(path) ?? new Map<string, number>();
        lastStep.set(path, steps);
        if (step < (steps.get(shipment) ?? -1)) outOfOrder.set(path, (outOfOrder.get(path) ?? 0) + 1);
        else steps.set(shipment, step);
      }
      res.end('ok');
    });
  });
  const base = (await listen(server)).replace(/\/hook$/, '');
  return {
    url: (path: string) => `${base}${path}`,
    count: (path: string) => arrivals.get(path)?.length ?? 0,
    times: (path: string) => arrivals.get(path) ?? [],
    outOfOrder: (path: string) => outOfOrder.get(path) ?? 0,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}

/** Starts `count` workers; resolves with their stop, which tells the rows they gave back unsent. */
async function startWorkers(setting: ControlsSetting, count: number): Promise<() => Promise<number>> {
  if (!setting.processes) {
    const workers = Array.from({ length: count }, () => startDeliveryWorker(setting.ctx, { pollMs: 200 }));
    return async () => {
      await Promise.all(workers.map((worker) => worker.stop()));
      return workers.reduce((sum, worker) => sum + worker.counts().givenBack, 0);
    };
  }
  const { url, schema } = setting.processes;
  const children: ChildProcess[] = await Promise.all(
    Array.from({ length: count }, async () => {
      const child = fork(new URL('./worker-process.ts', import.meta.url), [url, schema]);
      await new Promise<void>((resolve, reject) => {
        child.once('message', () => resolve());
        child.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
      });
      return child;
    }),
  );
  for (const child of children) child.send('go');
  return async () => {
    const answers = (await tellAll(children, 'stop', 'exit')) as Array<{ counts?: { givenBack?: number } }>;
    return answers.reduce((sum, answer) => sum + (answer?.counts?.givenBack ?? 0), 0);
  };
}

/** Arrivals per second from the first to the last. */
function meanRate(times: readonly number[]): number {
  if (times.length < 2) return 0;
  return ((times.length - 1) * 1000) / ((times.at(-1) as number) - (times[0] as number));
}

/** The most arrivals in any one-second window (sliding: each window starts at an arrival). */
function busiestSecond(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let end = 0;
  for (let start = 0; start < sorted.length; start++) {
    while (end < sorted.length && (sorted[end] as number) < (sorted[start] as number) + 1000) end++;
    most = Math.max(most, end - start);
  }
  return most;
}

/** A new company with one endpoint on `path` and `events` events queued for it. */
async function queued(
  setting: ControlsSetting,
  url: string,
  events: number,
  controls: Parameters<typeof addEndpoint>[3] = {},
): Promise<void> {
  const tenantId = await newTenant(setting.ctx);
  await addEndpoint(setting.ctx, tenantId, url, controls);
  await insertEvents(setting.ctx, tenantId, events, 500);
}

async function rateLimitRound(setting: ControlsSetting, workers: number, run: number) {
  const receiver = await pathReceiver();
  try {
    const alonePath = `/free-alone-${workers}-${run}`;
    await queued(setting, receiver.url(alonePath), UNLIMITED_EVENTS);
    let stop = await startWorkers(setting, workers);
    await waitFor(() => receiver.count(alonePath) >= UNLIMITED_EVENTS, 10);
    await stop();
    const alone = meanRate(receiver.times(alonePath));

    // In a thread of its own: this process also receives the unlimited endpoint's thousands a
    // second, and a stall of its event loop bunched arrivals (214 in one second, once).
    const limited = await startThreadReceiver();
    const besidePath = `/free-beside-${workers}-${run}`;
    const limitedEvents = LIMIT * LIMITED_SECONDS;
    await queued(setting, limited.url, limitedEvents, { rate_limit: LIMIT });
    await queued(setting, receiver.url(besidePath), UNLIMITED_EVENTS);
    stop = await startWorkers(setting, workers);
    await waitFor(
      () => limited.times.length >= limitedEvents && receiver.count(besidePath) >= UNLIMITED_EVENTS,
      10,
    );
    const givenBack = await stop();
    await limited.close();
    return {
      givenBack,
      busiest: busiestSecond(limited.times),
      mean: meanRate(limited.times),
      beside: meanRate(receiver.times(besidePath)),
      alone,
    };
  } finally {
    receiver.close();
  }
}

/** 1,000 shipments of 5 events each, queued step by step (each step one transaction per 500 shipments). */
async function queueShipmentLines(setting: ControlsSetting, url: string, ordering: 'none' | 'per_shipment') {
  const { ctx } = setting;
  const tenantId = await newTenant(ctx);
  await addEndpoint(ctx, tenantId, url, { ordering });
  const shipments = Array.from({ length: SHIPMENTS }, () => newId('shp'));
  for (let step = 0; step < EVENTS_PER_SHIPMENT; step++) {
    for (let from = 0; from < SHIPMENTS; from += 500) {
      await ctx.db.transaction().execute(async (trx) => {
        await recordEvents(
          ctx,
          trx,
          shipments.slice(from, from + 500).map((shipmentId, k) => {
            const data = shipmentData(from + k);
            return {
              type: 'shipment.status_changed',
              tenantId,
              livemode: true,
              data: { ...data, shipment: { ...data.shipment, id: shipmentId, external_ref: `step-${step}` } },
              createdAt: new Date(),
              customerAccountId: null,
              shipmentId,
            };
          }),
        );
      });
      runAfterCommit(ctx);
    }
  }
}

async function orderingRound(setting: ControlsSetting, run: number) {
  const receiver = await pathReceiver();
  const total = SHIPMENTS * EVENTS_PER_SHIPMENT;
  try {
    const result: Record<'none' | 'per_shipment', { rate: number; outOfOrder: number }> = {
      none: { rate: 0, outOfOrder: 0 },
      per_shipment: { rate: 0, outOfOrder: 0 },
    };
    for (const ordering of ['per_shipment', 'none'] as const) {
      const path = `/lines-${ordering}-${run}`;
      await queueShipmentLines(setting, receiver.url(path), ordering);
      const started = performance.now();
      const stop = await startWorkers(setting, 1);
      await waitFor(() => receiver.count(path) >= total, 10);
      const seconds = (performance.now() - started) / 1000;
      await stop();
      result[ordering] = { rate: total / seconds, outOfOrder: receiver.outOfOrder(path) };
    }
    return result;
  } finally {
    receiver.close();
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
};

/** Runs (g) and (h), `rounds` times each, and prints their lines. */
export async function controlsBench(setting: ControlsSetting, rounds: number): Promise<void> {
  const { engine } = setting;
  const where = setting.processes ? 'worker processes' : 'workers in one process';
  for (const workers of [1, 2]) {
    const runs = [];
    for (let run = 0; run < rounds; run++) runs.push(await rateLimitRound(setting, workers, run));
    const busiest = Math.max(...runs.map((r) => r.busiest));
    const mean = median(runs.map((r) => r.mean));
    const beside = median(runs.map((r) => r.beside));
    const alone = median(runs.map((r) => r.alone));
    const givenBack = runs.reduce((sum, r) => sum + r.givenBack, 0);
    console.log(
      `[${engine}] (g) rate limit ${LIMIT}/s, ${workers} ${workers === 1 ? where.replace('workers', 'worker').replace('processes', 'process') : where}: at most ${busiest} in any sliding second (limit ${LIMIT}; ${busiest <= LIMIT ? 'kept' : 'BROKEN'}), ${mean.toFixed(0)}/s on average (${(mean / LIMIT).toFixed(2)} of the limit, goal >= 0.90); the unlimited endpoint beside it ${beside.toFixed(0)} msg/s against ${alone.toFixed(0)} alone (${((1 - beside / alone) * 100).toFixed(1)}% slower, goal < 10%); ${givenBack} sends given back late for their time (${LIMIT * LIMITED_SECONDS} and ${UNLIMITED_EVENTS} messages; medians of ${rounds}; rounds ${runs.map((r) => `${r.busiest}/${r.mean.toFixed(0)}/${r.beside.toFixed(0)}/${r.alone.toFixed(0)}`).join(', ')})`,
    );
  }
  const runs = [];
  for (let run = 0; run < rounds; run++) runs.push(await orderingRound(setting, run));
  const ordered = median(runs.map((r) => r.per_shipment.rate));
  const unordered = median(runs.map((r) => r.none.rate));
  const outOfOrder = runs.reduce((sum, r) => sum + r.per_shipment.outOfOrder, 0);
  const unorderedOut = runs.reduce((sum, r) => sum + r.none.outOfOrder, 0);
  console.log(
    `[${engine}] (h) ordering per shipment, ${SHIPMENTS} shipments of ${EVENTS_PER_SHIPMENT} events, one worker: ${ordered.toFixed(0)} msg/s against ${unordered.toFixed(0)} for the same messages unordered (${(ordered / unordered).toFixed(2)} times, goal >= 0.5); arrivals out of their shipment's order: ${outOfOrder} ordered (must be 0), ${unorderedOut} unordered (medians of ${rounds}; rounds ${runs.map((r) => `${r.per_shipment.rate.toFixed(0)}/${r.none.rate.toFixed(0)}`).join(', ')})`,
  );
}
