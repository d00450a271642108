/**
 * What one delivered message costs the database, from the fan-out to the recorded success
 * (`npm run bench:profile`, issue 34 item 1); never a test. PostgreSQL only, on a quiet server that
 * this process can read the WAL of (pg_waldump, as the server's owner or root).
 *
 * For Waybill (one endpoint on a receiver on 127.0.0.1, one worker, WAYBILL_BENCH_EVENTS events,
 * default 20,000, queued 500 to a transaction as the API writes them) and for graphile-worker (its
 * jobs added 1,000 at a time, then drained with batched completion), each phase prints:
 * - rows written per message, by table (pg_stat_all_tables of the side's schema; the pools are
 *   closed before reading, since a backend flushes its counts at exit);
 * - WAL bytes per message, and the WAL records by kind (pg_waldump --stats=record over the phase's
 *   range: the whole server's, hence the quiet server).
 */
import { execFileSync } from 'node:child_process';
import pg from 'pg';
import { startDeliveryWorker } from '../src/delivery/worker.ts';
import {
  addEndpoint,
  insertEvents,
  newTenant,
  openBenchContext,
  receiver,
  succeeded,
  throwawaySchema,
  waitFor,
} from './fixtures.ts';
import { peerMessages } from './message.ts';
import { makePoster } from './peers/deliver.ts';
import { startGraphileSide } from './peers/graphile-side.ts';
import { ensurePeersInstalled } from './peers/install.ts';
import { PostgresCpuMeter, withAppName } from './peers/server-cpu.ts';

const url = process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench';
const EVENTS = Number(process.env.WAYBILL_BENCH_EVENTS ?? 20_000);
const WARM_UP = 2_000;

async function query<T>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

const walLsn = async () =>
  (await query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn'))[0]?.lsn ?? '';

interface TableRows {
  table: string;
  ins: number;
  upd: number;
  hot: number;
  del: number;
}

/** Rows written in `schema` so far, partitions folded into their parent. */
async function rowsWritten(schema: string): Promise<Map<string, TableRows>> {
  const rows = await query<{ relname: string; ins: string; upd: string; hot: string; del: string }>(
    `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del
     FROM pg_stat_all_tables WHERE schemaname = $1`,
    [schema],
  );
  const out = new Map<string, TableRows>();
  for (const row of rows) {
    const table = row.relname.replace(/_\d{8}$/, '');
    const t = out.get(table) ?? { table, ins: 0, upd: 0, hot: 0, del: 0 };
    t.ins += Number(row.ins);
    t.upd += Number(row.upd);
    t.hot += Number(row.hot);
    t.del += Number(row.del);
    out.set(table, t);
  }
  return out;
}

function printRows(label: string, before: Map<string, TableRows>, after: Map<string, TableRows>, n: number) {
  let total = 0;
  const parts: string[] = [];
  for (const [table, t] of after) {
    const b = before.get(table) ?? { ins: 0, upd: 0, hot: 0, del: 0 };
    const ins = t.ins - b.ins;
    const upd = t.upd - b.upd;
    const hot = t.hot - b.hot;
    const del = t.del - b.del;
    if (ins + upd + del === 0) continue;
    total += ins + upd + del;
    parts.push(
      `${table} ins ${(ins / n).toFixed(2)} upd ${(upd / n).toFixed(2)} (HOT ${(hot / n).toFixed(2)}) del ${(del / n).toFixed(2)}`,
    );
  }
  console.log(`  ${label}: rows written ${(total / n).toFixed(2)} per message: ${parts.join('; ')}`);
}

type IndexReads = Map<string, { scans: number; read: number; fetched: number }>;

/** Index entries read and live rows fetched through each index of the delivery log so far. */
async function indexReads(schema: string): Promise<IndexReads> {
  const rows = await query<{ name: string; scans: string; read: string; fetched: string }>(
    `SELECT indexrelname AS name, idx_scan AS scans, idx_tup_read AS read, idx_tup_fetch AS fetched
     FROM pg_stat_all_indexes WHERE schemaname = $1 AND relname = 'webhook_deliveries'`,
    [schema],
  );
  return new Map(
    rows.map((r) => [r.name, { scans: Number(r.scans), read: Number(r.read), fetched: Number(r.fetched) }]),
  );
}

/**
 * Issue 41 item 2: what the drain reads through the delivery log's indexes per message. A claim
 * that read only what it takes would read one entry of the claim's index (`webhook_deliveries_due`)
 * per message; the rest are entries of rows in flight (leased, not yet recorded) and of finished
 * rows whose entries no scan has yet found dead.
 */
function printIndexReads(label: string, before: IndexReads, after: IndexReads, n: number) {
  const parts: string[] = [];
  for (const [name, t] of after) {
    const b = before.get(name) ?? { scans: 0, read: 0, fetched: 0 };
    if (t.scans === b.scans) continue;
    parts.push(
      `${name} ${(t.scans - b.scans).toLocaleString('en-US')} scans, ${((t.read - b.read) / n).toFixed(2)} entries read, ${((t.fetched - b.fetched) / n).toFixed(2)} rows fetched`,
    );
  }
  console.log(`  ${label} index reads per message: ${parts.join('; ')}`);
}

/** pg_waldump's record statistics over [from, to), the kinds that carry 1% or more of the bytes. */
function walRecords(label: string, from: string, to: string, n: number) {
  const dataDirectory = execFileSync('psql', [url, '-Atc', 'SHOW data_directory'], {
    encoding: 'utf8',
  }).trim();
  const version = execFileSync('psql', [url, '-Atc', 'SHOW server_version_num'], { encoding: 'utf8' }).trim();
  const bin = `/usr/lib/postgresql/${Math.floor(Number(version) / 10_000)}/bin/pg_waldump`;
  let out: string;
  try {
    out = execFileSync(bin, ['-p', `${dataDirectory}/pg_wal`, '-s', from, '-e', to, '--stats=record'], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (error) {
    console.log(`  ${label}: pg_waldump not readable here (${(error as Error).message.split('\n')[0]})`);
    return;
  }
  const lines: string[] = [];
  for (const line of out.split('\n')) {
    // "Heap/INSERT   20000 ( 30.00)   1580000 ( 25.00) ...  combined bytes (percent)"
    const m = line.match(
      /^(\S+)\s+(\d+)\s+\(\s*[\d.]+\)\s+\d+\s+\(\s*[\d.]+\)\s+\d+\s+\(\s*[\d.]+\)\s+(\d+)\s+\(\s*([\d.]+)\)/,
    );
    if (!m || Number(m[4]) < 1) continue;
    lines.push(`${m[1]} ${(Number(m[2]) / n).toFixed(2)} rec, ${(Number(m[3]) / n).toFixed(0)} B`);
  }
  console.log(`  ${label} WAL by record kind (per message, ≥1% of bytes): ${lines.join('; ')}`);
}

async function walBetween(from: string, to: string): Promise<number> {
  return Number(
    (await query<{ b: string }>('SELECT pg_wal_lsn_diff($2, $1)::bigint AS b', [from, to]))[0]?.b,
  );
}

const APP = 'waybill-bench-profile';

/** The URL with PL/pgSQL functions timed (pg_stat_user_functions). */
function timedFunctions(schemaUrl: string): string {
  const parsed = new URL(schemaUrl);
  parsed.searchParams.set(
    'options',
    `${parsed.searchParams.get('options') ?? ''} -c track_functions=pl`.trim(),
  );
  return parsed.toString();
}

type FunctionTimes = Map<string, { calls: number; self: number; total: number }>;

async function functionTimes(schema: string): Promise<FunctionTimes> {
  const rows = await query<{ funcname: string; calls: string; self_time: number; total_time: number }>(
    'SELECT funcname, calls, self_time, total_time FROM pg_stat_user_functions WHERE schemaname = $1',
    [schema],
  );
  return new Map(
    rows.map((r) => [r.funcname, { calls: Number(r.calls), self: r.self_time, total: r.total_time }]),
  );
}

function printFunctions(label: string, before: FunctionTimes, after: FunctionTimes, n: number) {
  const parts: string[] = [];
  for (const [name, t] of after) {
    const b = before.get(name) ?? { calls: 0, self: 0, total: 0 };
    if (t.calls === b.calls) continue;
    parts.push(
      `${name} ${t.calls - b.calls} calls, ${(((t.self - b.self) * 1000) / n).toFixed(1)} µs self / ${(((t.total - b.total) * 1000) / n).toFixed(1)} µs total`,
    );
  }
  console.log(`  ${label} database functions, per message (wall time): ${parts.join('; ')}`);
}

async function profileWaybill() {
  const sink = await receiver();
  const schema = await throwawaySchema(url, 'profile');
  const named = withAppName(timedFunctions(schema.url), APP);
  const meter = new PostgresCpuMeter(url);
  await meter.open();
  const cpu: Record<string, number> = {};
  let opened = await openBenchContext(named, schema.name);
  const tenantId = await newTenant(opened.ctx);
  const endpointId = await addEndpoint(opened.ctx, tenantId, sink.url);
  const drain = async (arriving: number, count: number) => {
    await meter.start(APP);
    const before = sink.received.count;
    const worker = startDeliveryWorker(opened.ctx, { pollMs: 200 });
    // Arrivals first (no query), then the records: a count every few milliseconds would be the
    // largest statement of the drain.
    await waitFor(() => sink.received.count - before >= arriving, 20);
    await waitFor(async () => (await succeeded(opened.ctx, [endpointId])) >= count, 20);
    cpu.drain = (await meter.stop()).backends;
    await worker.stop();
    return worker.counts();
  };
  // Warm: plans kept, today's partition made, the receiver's connections open.
  await insertEvents(opened.ctx, tenantId, WARM_UP, 500);
  await drain(WARM_UP, WARM_UP);
  await opened.database.close();
  console.log(`Waybill, ${EVENTS} messages to one endpoint, one worker:`);
  const rows0 = await rowsWritten(schema.name);
  const f0 = await functionTimes(schema.name);
  const lsn0 = await walLsn();
  opened = await openBenchContext(named, schema.name);
  await meter.start(APP);
  await insertEvents(opened.ctx, tenantId, EVENTS, 500);
  cpu.fanOut = (await meter.stop()).backends;
  await opened.database.close();
  const lsn1 = await walLsn();
  const rows1 = await rowsWritten(schema.name);
  const f1 = await functionTimes(schema.name);
  const i1 = await indexReads(schema.name);
  opened = await openBenchContext(named, schema.name);
  const counts = await drain(EVENTS, WARM_UP + EVENTS);
  await opened.database.close();
  const lsn2 = await walLsn();
  const rows2 = await rowsWritten(schema.name);
  const f2 = await functionTimes(schema.name);
  const i2 = await indexReads(schema.name);
  printFunctions('fan-out', f0, f1, EVENTS);
  printFunctions('drain', f1, f2, EVENTS);
  printRows('fan-out', rows0, rows1, EVENTS);
  printRows('drain', rows1, rows2, EVENTS);
  printRows('in all', rows0, rows2, EVENTS);
  printIndexReads('drain', i1, i2, EVENTS);
  const fanOutWal = await walBetween(lsn0, lsn1);
  const drainWal = await walBetween(lsn1, lsn2);
  console.log(
    `  WAL per message: fan-out ${(fanOutWal / EVENTS).toFixed(0)} B (with the event's own row), drain ${(drainWal / EVENTS).toFixed(0)} B, in all ${((fanOutWal + drainWal) / EVENTS).toFixed(0)} B`,
  );
  const us = (seconds = 0) => ((seconds * 1e6) / EVENTS).toFixed(0);
  console.log(
    `  PostgreSQL CPU per message (its backends): fan-out ${us(cpu.fanOut)} µs (with the event's own row), drain ${us(cpu.drain)} µs`,
  );
  walRecords('fan-out', lsn0, lsn1, EVENTS);
  walRecords('drain', lsn1, lsn2, EVENTS);
  console.log(
    `  statements per message in the drain: ${((counts.claims + counts.recordBatches) / EVENTS).toFixed(3)} (${counts.claims} claims, ${counts.recordBatches} record batches)`,
  );
  await meter.close();
  await schema.drop();
  sink.server.close();
}

async function profileGraphile() {
  await ensurePeersInstalled();
  const sink = await receiver();
  const schema = await throwawaySchema(url, 'profile_gw');
  const poster = makePoster(sink.url, 64);
  const side = await startGraphileSide(url, schema.name, poster, { concurrency: 64, localQueueSize: 500 });
  const warm = peerMessages(WARM_UP, 'tn_warm');
  await side.drain(
    warm,
    async () => {},
    () => sink.received.count >= WARM_UP,
  );
  console.log(`graphile-worker, ${EVENTS} jobs, batched completion, 64 at once:`);
  const messages = peerMessages(EVENTS, 'tn_profile');
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const rows0 = await rowsWritten(schema.name);
  const lsn0 = await walLsn();
  let lsn1 = '';
  await side.drain(
    messages,
    async () => {
      lsn1 = await walLsn();
    },
    () => sink.received.count >= WARM_UP + EVENTS,
  );
  const lsn2 = await walLsn();
  // An idle backend flushes its counts within a second (PostgreSQL 15 and later).
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  const rows2 = await rowsWritten(schema.name);
  await side.close().catch(() => {});
  printRows('add_jobs and drain', rows0, rows2, EVENTS);
  const addWal = await walBetween(lsn0, lsn1);
  const drainWal = await walBetween(lsn1, lsn2);
  console.log(
    `  WAL per message: add_jobs ${(addWal / EVENTS).toFixed(0)} B (the job carries the message), drain ${(drainWal / EVENTS).toFixed(0)} B, in all ${((addWal + drainWal) / EVENTS).toFixed(0)} B`,
  );
  walRecords('add_jobs', lsn0, lsn1, EVENTS);
  walRecords('drain', lsn1, lsn2, EVENTS);
  sink.server.close();
  await poster.close();
}

await profileWaybill();
if (process.env.WAYBILL_BENCH_PEERS !== '0') await profileGraphile();
