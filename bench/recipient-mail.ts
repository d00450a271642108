/**
 * Milestone e-mails beside webhooks (issue 52 item 5): `npm run bench:recipient-mail`; never a test.
 * A whole Waybill on PostgreSQL (WAYBILL_BENCH_DATABASE_URL, default 127.0.0.1:5432/test, a
 * throwaway schema) with its background work as `waybill serve` runs it (startWorkers), a local SMTP
 * server (smtp-server, as the tests use) and a webhook receiver on 127.0.0.1. A live company with
 * an endpoint for `shipment.status_changed` moves MILESTONES shipments (default 1,000) to
 * `picked_up` as fast as the API takes them, twice in the same run:
 *
 * - without e-mail (notifications off): the webhooks' lag, from each move's answer to its message's
 *   arrival, p50 and p99 (the peer);
 * - with the milestone chosen: the same lag, and the time from the first move to the last e-mail
 *   received (goal: 1,000 in a minute), so that what mail costs the webhooks is read in one run.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { SMTPServer } from 'smtp-server';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { systemClock } from '../src/lib/clock.ts';
import { buildContext } from '../src/services.ts';
import { startWorkers } from '../src/worker.ts';
import { BENCH_SECRET_KEY, listen, throwawaySchema, waitFor } from './fixtures.ts';

const MILESTONES = Number(process.env.BENCH_MAIL_MILESTONES ?? 1000);
const GOAL_SECONDS = 60;
const postgresUrl = process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Moves in flight at once, as a busy integration sends them. */
const CONCURRENCY = 8;

async function api(address: string, method: string, path: string, body: unknown, token?: string) {
  const response = await fetch(`${address}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Record<string, unknown>;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function eachAtOnce<T>(items: readonly T[], task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) await task(items[next++] as T);
    }),
  );
}

/** When each shipment's status message arrived at the endpoint. */
const arrivals = new Map<string, number>();
const hooks = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as { data?: { shipment?: { id?: string } } };
    const id = body.data?.shipment?.id;
    if (id) arrivals.set(id, performance.now());
    res.end('ok');
  });
});
const hooksUrl = await listen(hooks);

const mails: number[] = [];
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  logger: false,
  // A mail server's own lookup of the client's name is its cost, not Waybill's: left out.
  disableReverseLookup: true,
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.on('end', () => {
      mails.push(performance.now());
      callback();
    });
  },
});
await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
const smtpPort = (smtp.server.address() as AddressInfo).port;

const schema = await throwawaySchema(postgresUrl, 'bench_mail');
const config = loadConfig({
  PORT: '0',
  WAYBILL_DATABASE_URL: postgresUrl,
  WAYBILL_SECRET_KEY: BENCH_SECRET_KEY,
  WAYBILL_DEMO: '0',
  WAYBILL_SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
  WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
});
const database = await openDatabase(config, { schema: schema.name, poolSize: 10 });
await migrateToLatest(database.db);
const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
const app = await buildApp(ctx);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
const workers = startWorkers(ctx);
try {
  await api(address, 'POST', '/v1/auth/signup', {
    email: 'bench@example.test',
    password: 'correct horse battery',
    name: 'Bench',
  });
  const person = (
    await api(address, 'POST', '/v1/auth/sessions', {
      email: 'bench@example.test',
      password: 'correct horse battery',
    })
  ).token as string;
  const tenantId = (await api(address, 'POST', '/v1/companies', { name: 'Bench Parcels' }, person))
    .id as string;
  const token = (
    await api(
      address,
      'POST',
      `/v1/companies/${tenantId}/api-tokens`,
      { name: 'bench', mode: 'live', scopes: ['shipments:read', 'shipments:write', 'webhooks:write'] },
      person,
    )
  ).token as string;
  await api(
    address,
    'POST',
    '/v1/webhook-endpoints',
    { url: hooksUrl, event_types: ['shipment.status_changed'] },
    token,
  );
  await workers.started;

  /** One leg: MILESTONES shipments moved to picked_up; the webhooks' lag, and the mail's end. */
  const leg = async (withMail: boolean) => {
    await api(
      address,
      'PATCH',
      `/v1/companies/${tenantId}`,
      { recipient_notifications: { enabled: withMail, events: ['picked_up'] } },
      person,
    );
    const shipments: string[] = [];
    await eachAtOnce(
      Array.from({ length: MILESTONES }, (_, i) => i),
      async (i) => {
        const created = await api(
          address,
          'POST',
          '/v1/shipments',
          {
            recipient_name: `Person ${i}`,
            recipient_email: `person${i}.${withMail}@example.test`,
            currency: 'EUR',
          },
          token,
        );
        shipments.push(created.id as string);
      },
    );
    const mailsBefore = mails.length;
    const answered = new Map<string, number>();
    const started = performance.now();
    await eachAtOnce(shipments, async (id) => {
      await api(address, 'POST', `/v1/shipments/${id}/status`, { status: 'picked_up' }, token);
      answered.set(id, performance.now());
    });
    const moved = performance.now() - started;
    await waitFor(() => shipments.every((id) => arrivals.has(id)), 20);
    if (withMail) await waitFor(() => mails.length >= mailsBefore + MILESTONES, 50);
    const lags: number[] = [];
    for (const [id, at] of answered) {
      const arrived = arrivals.get(id);
      if (arrived !== undefined) lags.push(arrived - at);
    }
    lags.sort((a, b) => a - b);
    const lastMail = withMail ? (mails[mailsBefore + MILESTONES - 1] as number) - started : null;
    return { moved, lags, lastMail };
  };

  console.log(
    `Milestone e-mail benchmark (issue 52): ${MILESTONES} shipments moved to picked_up, PostgreSQL`,
  );
  const quiet = await leg(false);
  const mailed = await leg(true);
  const line = (name: string, result: Awaited<ReturnType<typeof leg>>) =>
    `  ${name}: moves took ${(result.moved / 1000).toFixed(1)} s; webhook lag after the move's answer p50 ` +
    `${percentile(result.lags, 50).toFixed(0)} ms, p99 ${percentile(result.lags, 99).toFixed(0)} ms (${result.lags.length} matched)`;
  console.log(line('without e-mail (the peer)', quiet));
  console.log(line('with the milestone e-mailed', mailed));
  const seconds = (mailed.lastMail ?? 0) / 1000;
  console.log(
    `  ${MILESTONES} e-mails received by the SMTP server ${seconds.toFixed(1)} s after the first move ` +
      `(goal: within ${GOAL_SECONDS} s: ${seconds <= GOAL_SECONDS ? 'met' : 'NOT met'}); ` +
      `webhook p99 with e-mail ${(percentile(mailed.lags, 99) / Math.max(1, percentile(quiet.lags, 99))).toFixed(2)}× without`,
  );
} finally {
  await workers.stop();
  await app.close();
  await database.close();
  hooks.closeAllConnections();
  hooks.close();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
  await schema.drop();
}
