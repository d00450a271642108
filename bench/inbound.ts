/**
 * Inbound checkpoints applied per second (issue 51 item 7), from a carrier sending signed batches
 * of 100 to a source's URL over HTTP, as it would:
 *   WAYBILL_BENCH_DATABASE_URL=postgres://... npm run bench:inbound    (goal: >= 2,000 a second)
 *   WAYBILL_BENCH_DATABASE_URL=memory: npm run bench:inbound           (the embedded engine)
 * A whole Waybill listening on 127.0.0.1 (no worker: the fan-out's rows are written, nothing is
 * delivered), one company with BENCH_INBOUND_SHIPMENTS shipments (2,000) picked up, one endpoint
 * subscribed to shipment.status_changed so each move fans out as it would. Round 1: every shipment gets
 * a checkpoint `in_transit` (a move, with its events); rounds 2 and on: a checkpoint without
 * status (the timeline, the latest checkpoint). BENCH_INBOUND_IN_FLIGHT (4) batches at once, each
 * signed with the standardwebhooks package. Prints checkpoints applied a second for each kind, and
 * the route's own cost: a round whose numbers all match nothing (HTTP, signature, parse, match, log).
 * bench/tracking.ts runs measureInbound for both engines and both versions' endpoints.
 */
import pino from 'pino';
import { Webhook } from 'standardwebhooks';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import type { TenantAccess } from '../src/modules/accounts/access.ts';
import { createSource } from '../src/modules/inbound/sources.ts';
import { buildContext } from '../src/services.ts';
import { addEndpoint, BENCH_SECRET_KEY, distributeOnCitus, newTenant, throwawaySchema } from './fixtures.ts';

const BATCH = 100;

export interface InboundOptions {
  databaseUrl: string;
  shipments?: number;
  rounds?: number;
  inFlight?: number;
  /** The endpoints subscribed to shipment.status_changed, by the version each is pinned to. */
  endpoints?: ReadonlyArray<'2026-11-01' | '2026-12-01'>;
  /** Started and stopped around the round of moves (bench/tracking.ts counts its statements), told its messages. */
  meter?: { start(): void; stop(messages: number): void };
}

export interface InboundFigures {
  label: string;
  shipments: number;
  inFlight: number;
  /** Checkpoints applied a second: round 1, each a move (events and fan-out). */
  moves: number;
  /** The best round of checkpoints without a status (timeline, latest checkpoint). */
  timeline: number;
  timelineRounds: number;
  /** Every number unmatched: the route's own cost. */
  route: number;
}

/** One Waybill on `databaseUrl` (a throwaway schema on PostgreSQL), a carrier's signed batches of 100 over HTTP. */
export async function measureInbound(options: InboundOptions): Promise<InboundFigures> {
  const databaseUrl = options.databaseUrl;
  const SHIPMENTS = options.shipments ?? 2000;
  const ROUNDS = options.rounds ?? 3;
  const IN_FLIGHT = options.inFlight ?? 4;
  const onPostgres = databaseUrl.startsWith('postgres');
  const schema = onPostgres ? await throwawaySchema(databaseUrl, 'bench_inbound') : null;
  const config = loadConfig({
    PORT: '0',
    WAYBILL_DATABASE_URL: databaseUrl,
    WAYBILL_SECRET_KEY: BENCH_SECRET_KEY,
    WAYBILL_DEMO: '0',
    WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
  });
  const database = await openDatabase(config, schema ? { schema: schema.name, poolSize: 10 } : {});
  await migrateToLatest(database.db);
  const label = await distributeOnCitus(database, onPostgres ? 'PostgreSQL' : 'PGlite');
  const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
  const app = await buildApp(ctx);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const tenantId = await newTenant(ctx);
    for (const api_version of options.endpoints ?? ['2026-11-01']) {
      await addEndpoint(ctx, tenantId, 'http://127.0.0.1:9/hook', { api_version });
    }
    const now = new Date();
    const numbers: string[] = [];
    for (let done = 0; done < SHIPMENTS; done += 500) {
      const rows = Array.from({ length: Math.min(500, SHIPMENTS - done) }, (_, i) => {
        const number = `WB-BENCH-${done + i}`;
        numbers.push(number);
        return {
          id: newId('shp'),
          tenant_id: tenantId,
          customer_account_id: null,
          livemode: true,
          tracking_number: number,
          status: 'picked_up',
          external_ref: null,
          recipient_name: 'Bench Recipient',
          recipient_email: null,
          recipient_phone: null,
          payment_mode: 'prepaid',
          cod_amount_minor: null,
          currency: 'EUR',
          parcels: '[]',
          exception_reason: null,
          created_at: now,
          updated_at: now,
        };
      });
      await ctx.db.insertInto('shipments').values(rows).execute();
    }
    const access: TenantAccess = {
      tenantId,
      customerAccountId: null,
      livemode: true,
      scopes: new Set(['webhooks:write']),
      installationId: null,
      userId: null,
      actor: 'bench',
    };
    const source = await createSource(ctx, access, { name: 'Bench carrier', carrier_code: 'bench' });
    const signer = new Webhook(source.secret);
    // The configured base URL names port 0; the server listens where the system put it.
    const url = `${address}/inbound/${source.id}`;

    let sent = 0;
    async function round(index: number, unmatched = false): Promise<number> {
      const batches: string[] = [];
      for (let start = 0; start < numbers.length; start += BATCH) {
        batches.push(
          JSON.stringify({
            checkpoints: numbers.slice(start, start + BATCH).map((number) => ({
              tracking_number: unmatched ? `${number}-NONE` : number,
              occurred_at: new Date(Date.UTC(2026, 10, 21, 8 + index)).toISOString(),
              message: `Scan ${index} at the Leipzig hub`,
              location: { city: 'Leipzig', country: 'DE' },
              ...(index === 0 ? { status: 'in_transit' } : {}),
              external_id: `bench-${index}-${number}`,
            })),
          }),
        );
      }
      const started = performance.now();
      let accepted = 0;
      let next = 0;
      const lane = async () => {
        while (next < batches.length) {
          const body = batches[next++] as string;
          sent += 1;
          const id = `msg_bench_${sent}`;
          const at = new Date();
          const response = await fetch(url, {
            method: 'POST',
            body,
            headers: {
              'content-type': 'application/json',
              'webhook-id': id,
              'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
              'webhook-signature': signer.sign(id, at, body),
            },
          });
          const answer = (await response.json()) as { accepted?: number };
          if (response.status !== 202) throw new Error(`${response.status} ${JSON.stringify(answer)}`);
          accepted += unmatched ? BATCH : (answer.accepted ?? 0);
        }
      };
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
      const seconds = (performance.now() - started) / 1000;
      if (accepted !== numbers.length) throw new Error(`accepted ${accepted} of ${numbers.length}`);
      return accepted / seconds;
    }

    options.meter?.start();
    const moves = await round(0);
    options.meter?.stop(Math.ceil(SHIPMENTS / BATCH));
    const timeline: number[] = [];
    for (let i = 1; i < ROUNDS; i++) timeline.push(await round(i));
    // What the inbound route itself costs (HTTP, signature, parse, match, log): every number unknown.
    const route = await round(ROUNDS, true);
    return {
      label,
      shipments: SHIPMENTS,
      inFlight: IN_FLIGHT,
      moves,
      timeline: Math.max(...timeline),
      timelineRounds: timeline.length,
      route,
    };
  } finally {
    await app.close();
    await database.close();
    await schema?.drop();
  }
}

if (import.meta.main) {
  const figures = await measureInbound({
    databaseUrl: process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench',
    shipments: Number(process.env.BENCH_INBOUND_SHIPMENTS ?? 2000),
    rounds: Number(process.env.BENCH_INBOUND_ROUNDS ?? 3),
    inFlight: Number(process.env.BENCH_INBOUND_IN_FLIGHT ?? 4),
  });
  console.log(
    `${figures.label}: ${figures.shipments} shipments, batches of ${BATCH}, ${figures.inFlight} in flight`,
  );
  console.log(
    `  with a status move (events and fan-out): ${figures.moves.toFixed(0)} checkpoints/s (goal >= 2000)`,
  );
  console.log(
    `  timeline only (no move):                 ${figures.timeline.toFixed(0)} checkpoints/s (best of ${figures.timelineRounds})`,
  );
  console.log(`  the route alone (every number unmatched): ${figures.route.toFixed(0)} checkpoints/s`);
}
