import { sql } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, buildContext } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../../src/delivery/worker.ts';
import { call, createCompany, createShipment } from '../support/api.ts';
import { until as untilIn } from '../support/eventually.ts';
import { engine, startWaybill, TEST_SECRET_KEY, type TestWaybill } from '../support/harness.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { attemptsOf, deliveriesOf, insertEndpoint, type Receiver, startReceiver } from './support.ts';

/** Real time passes here: reconnecting is a matter of sockets, not of the injected clock. */
const until = (check: () => Promise<boolean> | boolean, timeoutMs = 20_000) => untilIn(check, timeoutMs);

// The outage is made by a proxy of the test's own, never by stopping the shared server.
describe.runIf(engine === 'postgres')('a PostgreSQL outage', () => {
  let proxy: TcpProxy;
  let w: TestWaybill;
  let receiver: Receiver;
  let worker: DeliveryWorker;
  let release: () => void = () => {};

  beforeAll(async () => {
    const direct = new URL(process.env.WAYBILL_TEST_DATABASE_URL as string);
    proxy = await startTcpProxy(direct.hostname, Number(direct.port || 5432));
    const viaProxy = new URL(direct);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    w = await startWaybill({ env: { WAYBILL_DATABASE_URL: viaProxy.toString() } });
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    receiver = await startReceiver((message, res) => {
      // The first message is answered only once the database is gone: its record must wait.
      if (receiver.received.indexOf(message) === 0) void held.then(() => res.end('late'));
      else res.end('ok');
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await receiver?.close();
    await w?.close();
    await proxy?.close();
  });

  it('rides it out: 503 meanwhile, then LISTEN, claims and records resume, nothing lost or doubled', async () => {
    const company = await createCompany(w);
    const endpoint = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    worker = startDeliveryWorker(w.ctx, { pollMs: 0, jitter: () => 0 });
    await createShipment(w, company.liveToken);
    await until(() => receiver.received.length === 1);

    const midQuery = sql`SELECT pg_sleep(5)`.execute(w.ctx.db);
    await new Promise((resolve) => setTimeout(resolve, 200));
    proxy.cut();
    await expect(midQuery).rejects.toThrow();

    const during = await call(w, 'GET', '/v1/shipments', { token: company.liveToken });
    expect(during.status).toBe(503);
    expect(during.headers['content-type']).toContain('application/problem+json');
    expect(during.body.code).toBe('service.unavailable');
    expect(during.headers['retry-after']).toBeDefined();
    const token = await call(w, 'POST', '/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      rawBody: 'grant_type=refresh_token&refresh_token=atr_x&client_id=app_x',
    });
    expect(token.status).toBe(503);
    expect(token.body.error).toBe('temporarily_unavailable');

    // The answer to the message in flight arrives while the database is away.
    release();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    proxy.restore();

    const [first] = await deliveriesOf(w, endpoint.id);
    await until(async () => (await deliveriesOf(w, endpoint.id))[0]?.status === 'succeeded');
    expect((await attemptsOf(w, first?.id as string)).map((a) => a.response_body)).toEqual(['late']);

    // Another process commits a shipment: only NOTIFY on the re-established LISTEN wakes this
    // worker (its poll is off, and the other process's in-process wake-up cannot reach it).
    const other = await otherProcess(w);
    await createShipment(other.w, company.liveToken);
    await until(() => receiver.received.length === 2);
    await other.close();

    await until(async () => (await deliveriesOf(w, endpoint.id)).every((d) => d.status === 'succeeded'));
    const deliveries = await deliveriesOf(w, endpoint.id);
    expect(deliveries).toHaveLength(2);
    for (const delivery of deliveries) expect(await attemptsOf(w, delivery.id)).toHaveLength(1);
    const after = await call(w, 'GET', '/v1/shipments', { token: company.liveToken });
    expect(after.status).toBe(200);
  });
});

/** A second Waybill on the same schema, connected directly, as another process would be. */
async function otherProcess(w: TestWaybill): Promise<{ w: TestWaybill; close(): Promise<void> }> {
  const config = loadConfig({
    WAYBILL_DATABASE_URL: process.env.WAYBILL_TEST_DATABASE_URL as string,
    WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
    WAYBILL_DEMO: '0',
    WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
  });
  const database = await openDatabase(config, { schema: w.schema as string });
  // On Citus, as the distribution step at its start would find (src/roles.ts).
  if (w.ctx.database.distributed) database.distributed = true;
  const ctx = buildContext({ config, database, clock: w.clock, logger: pino({ level: 'silent' }) });
  const app = await buildApp(ctx);
  const other: TestWaybill = { ...w, ctx, app };
  return {
    w: other,
    async close() {
      await app.close();
      await database.close();
    },
  };
}
