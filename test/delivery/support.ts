import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll } from 'vitest';
import { responseText } from '../../src/delivery/sender.ts';
import { startDeliveryWorker, type WorkerOptions } from '../../src/delivery/worker.ts';
import { type ManualClock, systemClock } from '../../src/lib/clock.ts';
import { newSigningSecret } from '../../src/lib/crypto.ts';
import { newId } from '../../src/lib/ids.ts';
import { waybill } from '../cli/support.ts';
import { engine, startWaybill, TEST_SECRET_KEY, type TestWaybill } from '../support/harness.ts';
import { checkReceived } from '../support/message-check.ts';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

export type Answer = (req: Received, res: ServerResponse) => void;

export interface Receiver {
  url: string;
  received: Received[];
  answer: Answer;
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1 whose answer a test sets. */
export async function startReceiver(answer: Answer = (_r, res) => res.end('ok')): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    received: [],
    answer,
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const message = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      checkReceived(message, receiver.url);
      receiver.received.push(message);
      receiver.answer(message, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

export interface EndpointInput {
  tenantId: string;
  url: string;
  eventTypes?: string[];
  livemode?: boolean;
  customerAccountId?: string | null;
  enabled?: boolean;
  createdBy?: string | null;
}

/** Inserts an endpoint row directly (the engine's tests do not depend on the management API). */
export async function insertEndpoint(
  w: TestWaybill,
  input: EndpointInput,
): Promise<{ id: string; secret: string }> {
  const id = newId('we');
  const secret = newSigningSecret();
  const now = w.clock.now();
  await w.ctx.db
    .insertInto('webhook_endpoints')
    .values({
      id,
      tenant_id: input.tenantId,
      customer_account_id: input.customerAccountId ?? null,
      installation_id: null,
      livemode: input.livemode ?? true,
      url: input.url,
      description: null,
      event_types: JSON.stringify(
        input.eventTypes ?? [
          'shipment.created',
          'shipment.status_changed',
          'shipment.delivered',
          'shipment.exception',
        ],
      ),
      enabled: input.enabled ?? true,
      disabled_reason: null,
      secret_sealed: w.ctx.secrets.seal(secret),
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      failing_since: null,
      failing_noticed_at: null,
      kind: 'endpoint',
      listener_seen_at: null,
      app_id: null,
      held: false,
      rate_limit: null,
      ordering: 'none',
      headers_sealed: null,
      paused_until: null,
      created_by: input.createdBy ?? null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { id, secret };
}

/** Verifies with the standardwebhooks package, with the receiver's clock at `now`. */
export function verify(message: Received, secret: string, now: Date): unknown {
  const realNow = Date.now;
  Date.now = () => now.getTime();
  try {
    return new Webhook(secret).verify(message.body, message.headers as Record<string, string>);
  } finally {
    Date.now = realNow;
  }
}

/** A worker driven by the test through tick(): no polling, no wake-ups, no jitter. */
export function testWorker(w: TestWaybill, options: WorkerOptions = {}) {
  return startDeliveryWorker(w.ctx, { listen: false, pollMs: 0, jitter: () => 0, ...options });
}

/** Sends everything due now, batch after batch, with a worker of the test's own. */
export async function drainAll(w: TestWaybill): Promise<void> {
  const worker = testWorker(w);
  try {
    while ((await worker.tick()) > 0) {}
  } finally {
    await worker.stop();
  }
}

/**
 * Makes what is due, then moves the clock to the next time in the endpoint's queue, up to `until`,
 * and so on (the queue's times: a message waiting behind another of its shipment is due no sooner).
 */
export async function runSchedule(
  w: TestWaybill,
  endpointId: string,
  worker: ReturnType<typeof testWorker>,
  until: Date,
): Promise<void> {
  for (;;) {
    if ((await worker.tick()) > 0) continue;
    const next = await w.ctx.db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.min('due_at').as('due'))
      .where('endpoint_id', '=', endpointId)
      .where('due_at', '>', w.clock.now())
      .executeTakeFirst();
    if (!next?.due || new Date(next.due) > until) return;
    w.clock.set(new Date(next.due));
  }
}

export async function deliveriesOf(w: TestWaybill, endpointId: string) {
  // Made at one clock time, deliveries are in the order of their ids (time-ordered): the order
  // they were written in, whatever order a scan (or Citus's merge of shards) finds them in.
  return w.ctx.db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('endpoint_id', '=', endpointId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/**
 * The queue's rows of a target (the deliveries with a `due_at`: pending with a time set, migration
 * 0080), soonest first, named as the queue's own table named them before.
 */
export async function queueOf(w: TestWaybill, endpointId: string) {
  return w.ctx.db
    .selectFrom('webhook_deliveries')
    .select([
      'id as delivery_id',
      'endpoint_id',
      'due_at as next_attempt_at',
      'locked_by',
      'locked_until',
      'line_shipment_id as shipment_id',
      'line_seq as seq',
    ])
    .where('endpoint_id', '=', endpointId)
    .where('due_at', 'is not', null)
    .orderBy('due_at')
    .execute()
    .then((rows) => rows.map((row) => ({ ...row, next_attempt_at: row.next_attempt_at as Date })));
}

/**
 * The attempts as stored (rows, and a first success kept in its delivery), with the answer's
 * head as text (stored as the bytes received).
 */
export async function attemptsOf(w: TestWaybill, deliveryId: string) {
  const rows = await w.ctx.db
    .selectFrom('webhook_attempt_log')
    .selectAll()
    .where('delivery_id', '=', deliveryId)
    .orderBy('attempted_at')
    .execute();
  return rows.map((row) => ({ ...row, response_body: responseText(row.response_body) }));
}

export function advance(clock: ManualClock, ms: number): void {
  clock.advance(ms);
}

export async function endpointRow(w: TestWaybill, id: string) {
  return w.ctx.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

/** A Waybill and a receiver for the tests of one describe block, closed after them. */
export function useWaybillAndReceiver(): { w: TestWaybill; receiver: Receiver } {
  const state = {} as { w: TestWaybill; receiver: Receiver };
  beforeAll(async () => {
    state.w = await startWaybill();
    state.receiver = await startReceiver();
  });
  afterAll(async () => {
    await state.receiver?.close();
    await state.w?.close();
  });
  return state;
}

/**
 * Two workers on the test's queue, on the real clock (the events are due: the manual clock stands
 * at a date long past): on PostgreSQL two `waybill worker` processes, as deployed; on the
 * embedded engine, which one process holds, two workers in this process. Resolves with their stop.
 */
export function startTwoWorkers(w: TestWaybill, options: WorkerOptions = {}): () => Promise<void> {
  if (engine === 'postgres') {
    const url = new URL(process.env.WAYBILL_TEST_DATABASE_URL as string);
    url.searchParams.set('options', `-c search_path=${w.schema}`);
    const started = [0, 1].map(() =>
      waybill(['worker'], {
        WAYBILL_DATABASE_URL: url.toString(),
        WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
        WAYBILL_DEMO: '0',
        WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
        PORT: '0',
      }),
    );
    // A test that fails before its stop must not leave them running.
    const orphaned = () => {
      for (const run of started) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    };
    process.once('exit', orphaned);
    return async () => {
      for (const run of started) run.child.kill('SIGTERM');
      await Promise.all(started.map((run) => run.exited));
      process.off('exit', orphaned);
    };
  }
  const realCtx = { ...w.ctx, clock: systemClock };
  const workers = [0, 1].map(() => startDeliveryWorker(realCtx, { listen: false, ...options }));
  return async () => {
    await Promise.all(workers.map((worker) => worker.stop()));
  };
}
