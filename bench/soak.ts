#!/usr/bin/env node
/**
 * A sustained load, minute by minute (issue 41 item 5); never a test. `waybill serve` is started as
 * `npm start` starts it (the demo seeded) on each engine in turn: the embedded one on a fresh
 * folder, then PostgreSQL on a fresh database (WAYBILL_BENCH_DATABASE_URL names the server,
 * default postgres://postgres@127.0.0.1:5432/postgres; a database of the bench's own is made on it
 * and dropped after). An endpoint on a receiver at 127.0.0.1 is created through the API with the
 * demo's test key, then shipment changes are made through the API at WAYBILL_BENCH_RATE events a
 * second (default 200) for WAYBILL_BENCH_SOAK_MINUTES (default 6).
 *
 * Printed for each minute: the events made, commit-to-arrival p50 and p99 (from the answer to the
 * request that committed an event to its message's arrival), the API's answer p99, the server's
 * share of a core and its RSS at the minute's end; then the goal: the last minute's p99 within 1.5
 * times the first's, and the RSS under 800 MB.
 *
 * WAYBILL_BENCH_SOAK_ENGINES picks the engines (`pglite,postgres`, the default, or one of them);
 * WAYBILL_BENCH_NODE_FLAGS passes Node flags to the server, and WAYBILL_BENCH_SOAK_OUTPUT names a
 * file to keep its output in (its log, --trace-gc's lines).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { BENCH_SECRET_KEY } from './fixtures.ts';
import {
  createEndpoint,
  demoKeyOf,
  drained,
  rssOf,
  shipmentChanges,
  startShipmentReceiver,
  startWaybill,
  stopWaybill,
  type Waybill,
  type Window,
  windowOf,
} from './shipment-load.ts';

const RATE = Number(process.env.WAYBILL_BENCH_RATE ?? 200);
const MINUTES = Number(process.env.WAYBILL_BENCH_SOAK_MINUTES ?? 6);
const ENGINES = (process.env.WAYBILL_BENCH_SOAK_ENGINES ?? 'pglite,postgres').split(',');
const SERVER_URL = process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
/** Node or V8 flags for the server (`--trace-gc`, `--cpu-prof`), to look into a minute that grew. */
const NODE_FLAGS = (process.env.WAYBILL_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const GOAL_GROWTH = 1.5;
const GOAL_RSS_MB = 800;
const DRAIN_TIMEOUT_MS = 120_000;

/** A fresh database on the PostgreSQL server; dropped by the function it returns. */
async function freshDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `waybill_soak_${process.pid}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(SERVER_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: SERVER_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

const ms = (value: number) => (Number.isNaN(value) ? '-' : value.toFixed(0).padStart(5));
const pct = (share: number) => (Number.isNaN(share) ? '-' : `${(share * 100).toFixed(0)}%`);

async function soak(engine: string, database: string): Promise<void> {
  const receiver = await startShipmentReceiver();
  let waybill: Waybill | null = null;
  try {
    waybill = await startWaybill({
      database,
      // PostgreSQL needs the key to seal secrets with (the embedded engine makes one of its own).
      ...(engine === 'postgres'
        ? { env: { WAYBILL_SECRET_KEY: BENCH_SECRET_KEY }, awaiting: /test API key\s+sk_test_\S+/ }
        : {}),
      nodeFlags: NODE_FLAGS,
      ...(process.env.WAYBILL_BENCH_SOAK_OUTPUT ? { output: process.env.WAYBILL_BENCH_SOAK_OUTPUT } : {}),
    });
    const key = demoKeyOf(waybill.banner);
    if (!key) throw new Error(`the demo printed no test API key:\n${waybill.banner}`);
    await createEndpoint(waybill.url, key, receiver.url);
    const idleRss = rssOf(waybill.pid);
    const outcome = await shipmentChanges(waybill, key, RATE, MINUTES * 60, `soak-${process.pid}-${engine}`);
    const drainSeconds = await drained(outcome, receiver.arrivals, DRAIN_TIMEOUT_MS);
    const minutes: Window[] = [];
    // The last minute takes in the requests still unanswered when the load stopped.
    for (let minute = 0; minute < MINUTES; minute++)
      minutes.push(
        windowOf(
          outcome,
          receiver.arrivals,
          minute * 60,
          minute + 1 < MINUTES ? (minute + 1) * 60 : Number.POSITIVE_INFINITY,
        ),
      );
    const lost = outcome.made.size - minutes.reduce((sum, w) => sum + w.arrived, 0);
    console.log(
      `[${engine}] ${RATE} events/s for ${MINUTES} min through the API, one endpoint at 127.0.0.1: ${outcome.made.size} events, ${outcome.failed} requests failed, ${outcome.heldBack.toFixed(1)} s held back, ${lost} messages missing, the last ${drainSeconds.toFixed(1)} s after the load; RSS ${idleRss.toFixed(0)} MB before the load; load average ${loadavg()[0]?.toFixed(2)}`,
    );
    for (const [minute, w] of minutes.entries())
      console.log(
        `[${engine}]   minute ${minute + 1}: ${String(w.events).padStart(6)} events  commit-to-arrival p50 ${ms(w.p50)} ms  p99 ${ms(w.p99)} ms   API answer p99 ${ms(w.answerP99)} ms   server CPU ${pct(w.serverCpu)}  RSS ${w.rss.toFixed(0)} MB`,
      );
    const first = minutes[0] as Window;
    const last = minutes[minutes.length - 1] as Window;
    const highestRss = Math.max(...outcome.samples.map((sample) => sample.rss));
    const growth = last.p99 / first.p99;
    console.log(
      `[${engine}] the last minute's p99 ${growth.toFixed(2)} times the first's (goal ≤ ${GOAL_GROWTH}: ${growth <= GOAL_GROWTH ? 'met' : 'NOT met'}); highest RSS ${highestRss.toFixed(0)} MB (goal < ${GOAL_RSS_MB}: ${highestRss < GOAL_RSS_MB ? 'met' : 'NOT met'})`,
    );
  } finally {
    if (waybill) await stopWaybill(waybill);
    receiver.server.closeAllConnections();
    receiver.server.close();
  }
}

for (const engine of ENGINES) {
  if (engine === 'pglite') {
    const folder = mkdtempSync(join(tmpdir(), 'waybill-soak-'));
    try {
      await soak(engine, join(folder, 'pglite'));
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  } else if (engine === 'postgres') {
    const database = await freshDatabase();
    try {
      await soak(engine, database.url);
    } finally {
      await database.drop();
    }
  } else {
    throw new Error(`unknown engine ${engine} in WAYBILL_BENCH_SOAK_ENGINES (pglite or postgres)`);
  }
}
