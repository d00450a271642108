/**
 * App subscriptions at scale (issue 32 item 6; `npm run bench:apps`); never a test. An app with
 * BENCH_APPS_INSTALLATIONS installations (default 10,000: one per company) subscribed to
 * `shipment.status_changed`; events of those companies are recorded as the API records them (the
 * fan-out in the same transaction, one statement for every installation), BENCH_APPS_PER_TX a
 * transaction. Figures, per engine (PGlite, then PostgreSQL when WAYBILL_BENCH_DATABASE_URL or
 * postgres://postgres@127.0.0.1:5432/bench answers, in a throwaway schema; when that URL names a
 * Citus coordinator, the schema is distributed as `waybill migrate` does, and the deliveries'
 * split between the worker nodes is printed too):
 *   - events/s through the fan-out: the subscription without a filter, with a filter that keeps a
 *     quarter (`data.shipment.status in [delivered]`), and the peer in the same run: the same events
 *     to companies with one plain endpoint each and no app;
 *   - deliveries/s by the delivery worker to a receiver on 127.0.0.1: the subscription's messages
 *     (one target per installation) beside the same number to the plain endpoints.
 */
import { sql } from 'kysely';
import pino from 'pino';
import { loadConfig } from '../src/config.ts';
import { type AppContext, runAfterCommit } from '../src/context.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { startDeliveryWorker } from '../src/delivery/worker.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { syncSubscriptionTargets } from '../src/modules/apps/subscriptions.ts';
import { recordEvents } from '../src/modules/shipments/events.ts';
import { buildContext } from '../src/services.ts';
import {
  addEndpoint,
  BENCH_SECRET_KEY,
  distributeOnCitus,
  receiver,
  type Sink,
  throwawaySchema,
  waitFor,
} from './fixtures.ts';
import { shipmentData } from './message.ts';

const INSTALLATIONS = Number(process.env.BENCH_APPS_INSTALLATIONS ?? 10_000);
const EVENTS = Number(process.env.BENCH_APPS_EVENTS ?? 4_000);
const PER_TX = Number(process.env.BENCH_APPS_PER_TX ?? 50);
/** Companies with one plain endpoint each (the peer): as many as the events spread over. */
const PLAIN_COMPANIES = Number(process.env.BENCH_APPS_PLAIN_COMPANIES ?? 1_000);
const postgresUrl = process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench';
const STATUSES = ['in_transit', 'delivered', 'out_for_delivery', 'exception'] as const;

/** `count` companies (name prefixed), their owner the bench person, in one statement each. */
async function companies(ctx: AppContext, prefix: string, count: number, userId: string): Promise<string[]> {
  const now = new Date().toISOString();
  await sql`
    INSERT INTO companies (id, name, live, created_at, updated_at)
    SELECT gen_random_uuid()::text, ${prefix} || g, true, ${now}::timestamptz, ${now}::timestamptz
    FROM generate_series(1, ${count}::int) g`.execute(ctx.db);
  await sql`
    INSERT INTO memberships (id, tenant_id, user_id, role, customer_account_id, created_at)
    SELECT 'mem_' || substr(md5(c.id), 1, 22), c.id, ${userId}, 'owner', NULL, ${now}::timestamptz
    FROM companies c WHERE c.name LIKE ${`${prefix}%`}`.execute(ctx.db);
  const rows = await sql<{ id: string }>`SELECT id FROM companies WHERE name LIKE ${`${prefix}%`}`.execute(
    ctx.db,
  );
  return rows.rows.map((row) => row.id);
}

async function setUp(ctx: AppContext, sink: Sink) {
  const now = new Date();
  const userId = newId('usr');
  await ctx.db
    .insertInto('users')
    .values({
      id: userId,
      email: `bench-${userId}@example.test`,
      name: 'Bench',
      password_hash: 'x',
      demo_reviewer: false,
      email_verified_at: now,
      created_at: now,
      updated_at: now,
    })
    .execute();
  const installed = await companies(ctx, 'Installed ', INSTALLATIONS, userId);
  const plain = await companies(ctx, 'Plain ', PLAIN_COMPANIES, userId);
  const plainEndpoints: string[] = [];
  for (const tenantId of plain) plainEndpoints.push(await addEndpoint(ctx, tenantId, sink.url));
  const appId = newId('app');
  await ctx.db
    .insertInto('apps')
    .values({
      id: appId,
      developer_id: userId,
      name: 'Fan-out',
      description: 'Bench app',
      homepage_url: null,
      privacy_url: null,
      support_url: null,
      redirect_uris: JSON.stringify(['https://bench.example/callback']),
      scopes: JSON.stringify(['shipments:read']),
      kind: 'confidential',
      client_secret_hash: null,
      events_url: null,
      events_secret_sealed: ctx.secrets.seal('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'),
      events_previous_secret_sealed: null,
      events_previous_secret_expires_at: null,
      status: 'private',
      created_at: now,
      updated_at: now,
    })
    .execute();
  await sql`
    INSERT INTO installations (id, app_id, tenant_id, customer_account_id, user_id, scopes, approved_at,
      created_at, updated_at)
    SELECT 'inst_' || substr(md5(c.id), 1, 22), ${appId}, c.id, NULL, ${userId}, '["shipments:read"]'::jsonb,
      ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz
    FROM companies c WHERE c.name LIKE 'Installed %'`.execute(ctx.db);
  return { appId, installed, plain, plainEndpoints };
}

/** Makes `filter` the active version's subscription, and keeps the targets (one statement). */
async function subscribe(ctx: AppContext, appId: string, url: string, filter: unknown, number: number) {
  const now = new Date();
  const manifest = {
    name: 'Fan-out',
    description: 'Bench app',
    redirect_uris: ['https://bench.example/callback'],
    scopes: ['shipments:read'],
    optional_scopes: [],
    subscriptions: [{ event_types: ['shipment.status_changed'], url, ...(filter ? { filter } : {}) }],
  };
  await ctx.db.transaction().execute(async (trx) => {
    await trx.updateTable('app_versions').set({ status: 'superseded' }).where('app_id', '=', appId).execute();
    await trx
      .insertInto('app_versions')
      .values({
        id: newId('apv'),
        app_id: appId,
        number,
        status: 'active',
        manifest: JSON.stringify(manifest),
        changes: '[]',
        message: null,
        created_by: null,
        created_at: now,
        released_at: now,
      })
      .execute();
    await syncSubscriptionTargets(trx, appId, now);
  });
}

/** Records EVENTS status changes spread over `tenants`; events/s and the delivery rows they made. */
async function fanOut(
  ctx: AppContext,
  tenants: string[],
): Promise<{ perSecond: number; deliveries: number }> {
  const before = await countDeliveries(ctx);
  const started = performance.now();
  for (let done = 0; done < EVENTS; done += PER_TX) {
    const n = Math.min(PER_TX, EVENTS - done);
    await ctx.db.transaction().execute((trx) =>
      recordEvents(
        ctx,
        trx,
        Array.from({ length: n }, (_, k) => {
          const i = done + k;
          const data = shipmentData(i);
          const status = STATUSES[i % STATUSES.length] as string;
          return {
            type: 'shipment.status_changed' as const,
            tenantId: tenants[(i * 7919) % tenants.length] as string,
            livemode: true,
            data: { ...data, status, shipment: { ...data.shipment, status } },
            createdAt: new Date(),
            customerAccountId: null,
          };
        }),
      ),
    );
  }
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: EVENTS / seconds, deliveries: (await countDeliveries(ctx)) - before };
}

async function countDeliveries(ctx: AppContext): Promise<number> {
  const row = await sql<{ n: string }>`SELECT count(*) AS n FROM webhook_deliveries`.execute(ctx.db);
  return Number(row.rows[0]?.n ?? 0);
}

/** Runs the delivery worker until `expected` more messages reached the sink; deliveries/s. */
async function deliver(ctx: AppContext, sink: Sink, expected: number): Promise<number> {
  const before = sink.received.count;
  const started = performance.now();
  const worker = startDeliveryWorker(ctx, { pollMs: 200 });
  runAfterCommit(ctx);
  await waitFor(() => sink.received.count - before >= expected, 10);
  const seconds = (performance.now() - started) / 1000;
  await worker.stop();
  return expected / seconds;
}

/** Marks everything waiting as cancelled, so the next delivery round sends only what it made. */
async function clearQueue(ctx: AppContext) {
  await sql`UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, due_at = NULL
    WHERE status = 'pending'`.execute(ctx.db);
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** On Citus: the deliveries made so far, by the worker node holding their company's shard. */
async function splitByNode(ctx: AppContext): Promise<string> {
  const { rows } = await sql<{ node: string; deliveries: string; companies: string }>`
    SELECT n.nodename || ':' || n.nodeport AS node, sum(d.n) AS deliveries, count(*) AS companies
    FROM (SELECT tenant_id, count(*) AS n FROM webhook_deliveries GROUP BY tenant_id) d
    JOIN pg_dist_placement p
      ON p.shardid = get_shard_id_for_distribution_column('webhook_deliveries', d.tenant_id)
    JOIN pg_dist_node n ON n.groupid = p.groupid
    GROUP BY 1 ORDER BY 1`.execute(ctx.db);
  return `deliveries by worker node: ${rows.map((r) => `${r.node} ${fmt(Number(r.deliveries))} (${fmt(Number(r.companies))} companies)`).join(', ')}`;
}

async function benchEngine(engineLabel: string, databaseUrl: string, schema?: string): Promise<void> {
  const config = loadConfig({
    WAYBILL_DATABASE_URL: databaseUrl,
    WAYBILL_SECRET_KEY: BENCH_SECRET_KEY,
    WAYBILL_DEMO: '0',
    WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
  });
  const database = await openDatabase(config, schema ? { schema, poolSize: 10 } : {});
  await migrateToLatest(database.db);
  const label = await distributeOnCitus(database, engineLabel);
  const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
  const sink = await receiver();
  try {
    const setupStarted = performance.now();
    const { appId, installed, plain } = await setUp(ctx, sink);
    await subscribe(ctx, appId, sink.url, null, 1);
    const targets = await sql<{ n: string }>`
      SELECT count(*) AS n FROM webhook_endpoints WHERE kind = 'subscription'`.execute(ctx.db);
    console.log(
      `${label}: ${fmt(INSTALLATIONS)} installations, ${fmt(Number(targets.rows[0]?.n))} subscription targets kept by one statement; set-up ${fmt(performance.now() - setupStarted)} ms`,
    );

    const unfiltered = await fanOut(ctx, installed);
    console.log(
      `${label}: fan-out to the app, no filter: ${fmt(unfiltered.perSecond)} events/s (${fmt(unfiltered.deliveries)} deliveries for ${fmt(EVENTS)} events)`,
    );
    await clearQueue(ctx);
    const plainFanOut = await fanOut(ctx, plain);
    console.log(
      `${label}: peer, plain endpoints (${fmt(PLAIN_COMPANIES)} companies, one endpoint each, no app): ${fmt(plainFanOut.perSecond)} events/s (${fmt(plainFanOut.deliveries)} deliveries)`,
    );
    const plainRate = await deliver(ctx, sink, plainFanOut.deliveries);
    await clearQueue(ctx);

    await subscribe(ctx, appId, sink.url, { 'data.shipment.status': { in: ['delivered'] } }, 2);
    const filtered = await fanOut(ctx, installed);
    console.log(
      `${label}: fan-out to the app, filter data.shipment.status in [delivered]: ${fmt(filtered.perSecond)} events/s (${fmt(filtered.deliveries)} deliveries for ${fmt(EVENTS)} events)`,
    );
    await clearQueue(ctx);

    await subscribe(ctx, appId, sink.url, null, 3);
    const again = await fanOut(ctx, installed);
    const subscriptionRate = await deliver(ctx, sink, again.deliveries);
    console.log(
      `${label}: delivery rate, subscription messages (${fmt(again.deliveries)} to as many installations): ${fmt(subscriptionRate)}/s; plain endpoints (${fmt(plainFanOut.deliveries)} to ${fmt(PLAIN_COMPANIES)} endpoints): ${fmt(plainRate)}/s`,
    );
    if (database.distributed) console.log(`${label}: ${await splitByNode(ctx)}`);
  } finally {
    sink.server.closeAllConnections();
    await new Promise<void>((resolve) => sink.server.close(() => resolve()));
    await database.close();
  }
}

await benchEngine('PGlite (embedded)', 'memory:');
let schema: Awaited<ReturnType<typeof throwawaySchema>> | null = null;
try {
  schema = await throwawaySchema(postgresUrl, 'bench_apps');
} catch (error) {
  console.log(`PostgreSQL: not measured (${(error as Error).message})`);
}
if (schema) {
  try {
    await benchEngine('PostgreSQL', postgresUrl, schema.name);
  } finally {
    await schema.drop();
  }
}
