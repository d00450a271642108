/**
 * The delivery engine on a Citus cluster (`npm run bench:citus`, issue 42); never a test. On the
 * coordinator at WAYBILL_BENCH_CITUS_URL (default the local cluster's, 127.0.0.1:9700), in a
 * throwaway schema migrated and distributed as `waybill migrate` does (the session's
 * `citus.shard_count`): WAYBILL_BENCH_CITUS_COMPANIES companies (default 200), each with one
 * enabled endpoint on a receiver on 127.0.0.1, and WAYBILL_BENCH_CITUS_EVENTS shipment events each
 * (default 25), written as the API writes them (the fan-out in their transaction). Then:
 *
 * - the drain: a delivery worker in a process of its own (this file, `worker` argument) sends them
 *   all; printed: messages delivered per second (first to last arrival), the worker's claims;
 * - where they went: deliveries and companies per worker node, by the node that holds each
 *   company's shard of `webhook_deliveries` (citus_shards);
 * - the claim alone: as many messages again, queued, then claimed by the coordinator's client
 *   with the worker's settings (64 a claim, 8 an endpoint) until none is left; printed: wall time
 *   per claim and per delivery, and each node's PostgreSQL CPU per delivery (the cluster's
 *   processes on this machine: a postmaster's own time, its children's, and its reaped children's);
 *   and the claim's first step alone, its read of due companies over every shard, beside the floor
 *   of its fallback while a node is away (`run_command_on_shards`).
 *
 * Then the same companies and events on one PostgreSQL (WAYBILL_BENCH_POSTGRES_URL, default the
 * machine's own at 127.0.0.1:5432), drained by the same worker process, and one line for each leg
 * (issue 54 item 6): `<leg>: drain <n> messages/s; PostgreSQL CPU per delivery: coordinator <µs>,
 * workers <µs> <µs>, total <µs>`, with the goals beside them. The one-PostgreSQL figure is its whole
 * server's CPU, so whatever else runs there in those seconds counts too.
 *
 * The schemas are dropped at the end.
 */
import { fork } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { distributeTables } from '../src/db/distribute.ts';
import { claimDue } from '../src/delivery/claim.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../src/delivery/worker.ts';
import type { WorkerCounts } from '../src/delivery/worker-types.ts';
import {
  addEndpoint,
  insertEvents,
  newTenant,
  openBenchContext,
  receiver,
  throwawaySchema,
  waitFor,
} from './fixtures.ts';

const url = process.env.WAYBILL_BENCH_CITUS_URL ?? 'postgres://postgres@127.0.0.1:9700/test';
const singleUrl = process.env.WAYBILL_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const COMPANIES = Number(process.env.WAYBILL_BENCH_CITUS_COMPANIES ?? 200);
const EVENTS_PER_COMPANY = Number(process.env.WAYBILL_BENCH_CITUS_EVENTS ?? 25);
/** Companies set up or written for at once. */
const CONCURRENCY = 8;

/** The worker process: the engine as `waybill worker` runs it on Citus, counts on "stop". */
async function runWorker(legUrl: string, schema: string, distributed: boolean): Promise<void> {
  const { ctx, database } = await openBenchContext(legUrl, schema);
  // What the distribution step at a worker's start finds (roles.ts): the tables are distributed.
  database.distributed = distributed;
  let worker: DeliveryWorker | null = null;
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (command: 'go' | 'stop') => {
    if (command === 'go') {
      worker = startDeliveryWorker(ctx);
      return;
    }
    await worker?.stop();
    const counts = worker?.counts() ?? null;
    await database.close();
    process.send?.({ counts }, () => process.exit(0));
  });
  process.send?.('ready');
}

/** Runs `task` over `items`, CONCURRENCY at a time, in order of the items. */
async function eachAtOnce<T, R>(items: readonly T[], task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(CONCURRENCY, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await task(items[index] as T);
      }
    }),
  );
  return results;
}

/** A node of the cluster, and its postmaster's pid when it runs on this machine. */
interface Node {
  name: string;
  port: number;
  role: 'coordinator' | 'worker';
  postmaster: number | null;
}

function statFields(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? null;
  } catch {
    return null;
  }
}

/**
 * A node's PostgreSQL CPU so far, seconds: its postmaster's own and reaped children's, and each
 * live child's (proc(5): utime 14, stime 15, cutime 16, cstime 17; fields from the state on).
 */
function nodeCpu(postmaster: number): number {
  const own = statFields(postmaster);
  if (!own) return Number.NaN;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100;
}

async function onNode<T extends pg.QueryResultRow>(port: number, text: string, base = url): Promise<T[]> {
  const nodeUrl = new URL(base);
  nodeUrl.port = String(port);
  nodeUrl.searchParams.delete('options');
  const client = new pg.Client({ connectionString: nodeUrl.toString() });
  await client.connect();
  try {
    return (await client.query<T>(text)).rows;
  } finally {
    await client.end();
  }
}

/**
 * The cluster's nodes (or the one PostgreSQL's, as its coordinator); the postmaster of each that
 * runs here (the parent of its checkpointer).
 */
async function clusterNodes(legUrl: string, distributed: boolean): Promise<Node[]> {
  const coordinatorPort = Number(new URL(legUrl).port || 5432);
  const workers = distributed
    ? await onNode<{ nodename: string; nodeport: number }>(
        coordinatorPort,
        'SELECT nodename, nodeport FROM pg_dist_node WHERE isactive AND groupid <> 0 ORDER BY nodeport',
        legUrl,
      )
    : [];
  const nodes: Node[] = [
    { name: new URL(legUrl).hostname, port: coordinatorPort, role: 'coordinator', postmaster: null },
    ...workers.map((w) => ({
      name: w.nodename,
      port: w.nodeport,
      role: 'worker' as const,
      postmaster: null,
    })),
  ];
  for (const node of nodes) {
    if (!['127.0.0.1', 'localhost'].includes(node.name)) continue;
    const [row] = await onNode<{ pid: number }>(
      node.port,
      "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
      legUrl,
    );
    const fields = row ? statFields(row.pid) : null;
    node.postmaster = fields ? Number(fields[1]) : null;
  }
  return nodes;
}

const cpuOf = (nodes: Node[]) =>
  nodes.map((n) => (n.postmaster === null ? Number.NaN : nodeCpu(n.postmaster)));
const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');

/** One leg's drain: messages a second, and each node's PostgreSQL CPU per delivery (µs). */
interface Leg {
  name: string;
  drain: number;
  coordinator: number;
  workers: number[];
}

async function runLeg(name: string, legUrl: string, distributed: boolean): Promise<Leg> {
  const total = COMPANIES * EVENTS_PER_COMPANY;
  const schema = await throwawaySchema(legUrl, 'bench_citus');
  const { ctx, database } = await openBenchContext(legUrl, schema.name);
  const sink = await receiver();
  try {
    console.log(`\n== ${name} ==`);
    let started = performance.now();
    if (distributed) {
      const outcome = await distributeTables(database.db);
      if (!outcome) throw new Error(`the citus extension is not installed in the database of ${legUrl}`);
      database.distributed = true;
      const { rows: shards } = await queryAt<{ n: number }>(
        schema.url,
        `SELECT count(*)::int AS n FROM citus_shards WHERE table_name = 'webhook_deliveries'::regclass`,
      );
      console.log(
        `Citus at ${legUrl}, schema ${schema.name}: ${outcome.done.length} tables placed in ` +
          `${((performance.now() - started) / 1000).toFixed(1)} s, ${shards[0]?.n ?? '?'} shards of webhook_deliveries`,
      );
    } else console.log(`PostgreSQL at ${legUrl}, schema ${schema.name}`);

    started = performance.now();
    const tenants = await eachAtOnce(Array.from({ length: COMPANIES }), () => newTenant(ctx));
    await eachAtOnce(tenants, (tenant) => addEndpoint(ctx, tenant, sink.url));
    console.log(
      `${COMPANIES} companies with an endpoint each: ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );

    const write = async () => {
      const at = performance.now();
      await eachAtOnce(tenants, (tenant) => insertEvents(ctx, tenant, EVENTS_PER_COMPANY, 25));
      return (performance.now() - at) / 1000;
    };
    const wrote = await write();
    console.log(
      `${total} events written (fan-out in their transaction, 25 a transaction): ${wrote.toFixed(1)} s, ` +
        `${Math.round(total / wrote)} events/s`,
    );

    // The drain, by a worker process.
    const child = fork(
      fileURLToPath(import.meta.url),
      ['worker', legUrl, schema.name, distributed ? 'distributed' : 'single'],
      { stdio: 'inherit' },
    );
    await new Promise((resolve) => child.once('message', resolve));
    const nodes = await clusterNodes(legUrl, distributed);
    const cpuBefore = cpuOf(nodes);
    const go = performance.now();
    child.send('go');
    await waitFor(() => sink.received.count >= total, 50);
    const cpuAfter = cpuOf(nodes);
    const times = [...sink.arrivals.values()].sort((a, b) => a - b);
    const first = times[0] ?? go;
    const last = times[times.length - 1] ?? go;
    const counts = await new Promise<WorkerCounts | null>((resolve) => {
      child.once('message', (message) => resolve((message as { counts: WorkerCounts | null }).counts));
      child.send('stop');
    });
    console.log(
      `\nDrain: ${sink.received.count} messages delivered, ${Math.round(total / ((last - first) / 1000))} ` +
        `messages/s from the first arrival to the last (${((last - first) / 1000).toFixed(2)} s; ` +
        `${((first - go) / 1000).toFixed(2)} s from "go" to the first)`,
    );
    if (counts)
      console.log(
        `  worker: ${counts.claims} claims (${counts.emptyClaims} empty), ${counts.claimedRows} rows claimed, ` +
          `${(counts.claimedRows / Math.max(1, counts.claims - counts.emptyClaims)).toFixed(1)} a claim that took some; ` +
          `${counts.recordBatches} record batches`,
      );
    const perDelivery = nodes.map(
      (_, i) => (((cpuAfter[i] as number) - (cpuBefore[i] as number)) * 1e6) / total,
    );
    for (const [i, node] of nodes.entries())
      console.log(
        `  ${node.role} ${node.name}:${node.port}: PostgreSQL CPU ${fixed(perDelivery[i] as number, 0)} µs a delivery`,
      );
    const leg: Leg = {
      name,
      drain: Math.round(total / ((last - first) / 1000)),
      coordinator: perDelivery[0] as number,
      workers: perDelivery.slice(1),
    };
    if (!distributed) return leg;

    // Where the deliveries went: each company's shard's node.
    const { rows: perTenant } = await ctx.db
      .selectFrom('webhook_deliveries')
      .select((eb) => ['tenant_id', eb.fn.countAll<string>().as('n')])
      .where('status', '=', 'succeeded')
      .groupBy('tenant_id')
      .execute()
      .then((rows) => ({ rows }));
    const { rows: placed } = await queryAt<{ tenant: string; node: string }>(
      schema.url,
      `SELECT t AS tenant, s.nodename || ':' || s.nodeport AS node
       FROM unnest($1::text[]) AS t
       JOIN citus_shards s ON s.table_name = 'webhook_deliveries'::regclass
         AND s.shardid = get_shard_id_for_distribution_column('webhook_deliveries', t)`,
      [perTenant.map((r) => r.tenant_id)],
    );
    const nodeOf = new Map(placed.map((p) => [p.tenant, p.node]));
    const split = new Map<string, { companies: number; deliveries: number }>();
    for (const row of perTenant) {
      const node = nodeOf.get(row.tenant_id) ?? '?';
      const entry = split.get(node) ?? { companies: 0, deliveries: 0 };
      entry.companies += 1;
      entry.deliveries += Number(row.n);
      split.set(node, entry);
    }
    console.log('\nDeliveries by worker node (the node of the company’s shard):');
    for (const [node, { companies, deliveries }] of [...split].sort())
      console.log(
        `  ${node}: ${deliveries} deliveries (${((100 * deliveries) / total).toFixed(1)} %), ${companies} companies`,
      );

    // The claim alone, as the worker makes it (64 rows, 8 an endpoint), by this process.
    await write();
    const claimNodesBefore = cpuOf(nodes);
    const claimStarted = performance.now();
    let claimed = 0;
    let claims = 0;
    let empty = 0;
    let after = '';
    let emptyInARow = 0;
    while (claimed < total && emptyInARow < 20) {
      const now = new Date();
      const result = await claimDue(
        ctx.db,
        {
          workerId: 'wrk_bench_citus',
          now,
          leaseUntil: new Date(now.getTime() + 600_000),
          limit: 64,
          perEndpoint: 8,
          room: new Map(),
          after,
        },
        true,
      );
      claims += 1;
      claimed += result.rows.length;
      if (result.rows.length === 0) empty += 1;
      emptyInARow = result.rows.length === 0 ? emptyInARow + 1 : 0;
      after = result.next;
    }
    const claimMs = performance.now() - claimStarted;
    const claimNodesAfter = cpuOf(nodes);
    console.log(
      `\nThe claim alone: ${claimed} of ${total} queued messages in ${claims} claims ` +
        `(${empty} empty; ${(claimed / claims).toFixed(1)} a claim), ${(claimMs / claims).toFixed(2)} ms a claim, ` +
        `${((claimMs * 1000) / Math.max(1, claimed)).toFixed(0)} µs a delivery (wall, from the coordinator's client)`,
    );
    for (const [i, node] of nodes.entries())
      console.log(
        `  ${node.role} ${node.name}:${node.port}: PostgreSQL CPU ${fixed((((claimNodesAfter[i] as number) - (claimNodesBefore[i] as number)) * 1e6) / Math.max(1, claimed), 0)} µs a claimed delivery`,
      );
    // The claim's first step, its read of due companies, as one query over every shard; and the
    // floor of its fallback while a node is away (run_command_on_shards, a connection per shard).
    const timed = async (statement: () => Promise<unknown>) => {
      const at = performance.now();
      for (let i = 0; i < 20; i++) await statement();
      return ((performance.now() - at) / 20).toFixed(2);
    };
    const acrossShards = await timed(() =>
      sql`SELECT tenant_id FROM webhook_deliveries
        WHERE due_at IS NOT NULL AND due_at <= now() AND (locked_until IS NULL OR locked_until < now())
        GROUP BY tenant_id ORDER BY min(due_at) LIMIT 16`.execute(ctx.db),
    );
    const shardByShard = await timed(() =>
      sql`SELECT count(*) FROM run_command_on_shards('webhook_deliveries', 'SELECT 1')`.execute(ctx.db),
    );
    console.log(
      `  its read of due companies, one query over every shard: ${acrossShards} ms; a \`SELECT 1\` on ` +
        `every shard by run_command_on_shards (the floor of that read while a node is away): ${shardByShard} ms`,
    );
    return leg;
  } finally {
    sink.server.closeAllConnections();
    sink.server.close();
    await database.close();
    await schema.drop();
  }
}

async function queryAt<T extends pg.QueryResultRow>(
  connectionString: string,
  text: string,
  values: unknown[] = [],
): Promise<{ rows: T[] }> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    return { rows: (await client.query<T>(text, values)).rows };
  } finally {
    await client.end();
  }
}

// Last: the functions above use constants declared after them.
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const µs = (value: number) => `${fixed(value, 0)} µs`;

/** A leg's line as issue 54 item 6 fixes it. */
function legLine(leg: Leg): string {
  const cpu =
    leg.workers.length === 0
      ? `coordinator ${µs(leg.coordinator)}`
      : `coordinator ${µs(leg.coordinator)}, workers ${leg.workers.map(µs).join(' ')}, total ${µs(leg.coordinator + sum(leg.workers))}`;
  return `${leg.name}: drain ${leg.drain} messages/s; PostgreSQL CPU per delivery: ${cpu}`;
}

async function main(): Promise<void> {
  const cluster = await runLeg('Citus', url, true);
  const single = await runLeg('one PostgreSQL', singleUrl, false);
  const clusterTotal = cluster.coordinator + sum(cluster.workers);
  const verdict = (ok: boolean) => (ok ? 'PASS' : 'MISS');
  console.log(`\n${legLine(cluster)}\n${legLine(single)}`);
  console.log(
    `goal: cluster CPU per delivery ${fixed(clusterTotal / single.coordinator)}× one PostgreSQL's (at most 2×) ${verdict(clusterTotal <= 2 * single.coordinator)}`,
  );
  console.log(
    `goal: coordinator's share ${fixed((100 * cluster.coordinator) / clusterTotal, 1)} % (at most 10 %) ${verdict(cluster.coordinator <= 0.1 * clusterTotal)}`,
  );
  console.log(
    `goal: drain of one worker process ${fixed(cluster.drain / single.drain)}× one PostgreSQL's (at least 0.5×) ${verdict(cluster.drain >= 0.5 * single.drain)}`,
  );
}

if (process.argv[2] === 'worker')
  await runWorker(process.argv[3] as string, process.argv[4] as string, process.argv[5] === 'distributed');
else await main();
