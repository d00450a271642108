import { type ChildProcess, spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany, createShipment } from '../support/api.ts';
import { until } from '../support/eventually.ts';
import { engine, startWaybill, TEST_SECRET_KEY, type TestWaybill } from '../support/harness.ts';
import { insertEndpoint, type Receiver, startReceiver } from './support.ts';

const EVENTS = 40;

// A separate worker process needs PostgreSQL: the embedded engine belongs to one process.
describe.runIf(engine === 'postgres')('a worker killed mid-batch', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  const children: ChildProcess[] = [];

  function startWorkerProcess(): ChildProcess {
    const url = new URL(process.env.WAYBILL_TEST_DATABASE_URL as string);
    url.searchParams.set('options', `-c search_path=${w.schema}`);
    const child = spawn(process.execPath, ['src/main.ts', 'worker'], {
      env: {
        PATH: process.env.PATH,
        WAYBILL_DATABASE_URL: url.toString(),
        WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
        WAYBILL_DEMO: '0',
        WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
        WAYBILL_WEBHOOK_LEASE_SECONDS: '11',
        WAYBILL_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    children.push(child);
    return child;
  }

  beforeAll(async () => {
    w = await startWaybill();
    // Slow answers, so that the kill finds requests in flight.
    receiver = await startReceiver((_m, res) => {
      setTimeout(() => res.end('ok'), 400);
    });
  });
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
    await receiver?.close();
    await w?.close();
  });

  it('loses nothing: every webhook-id arrives at least once and no delivery stays claimed', async () => {
    const company = await createCompany(w);
    await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    for (let i = 0; i < EVENTS; i++) await createShipment(w, company.liveToken);
    // The worker process runs on the system clock: make the deliveries due by it.
    await w.ctx.db
      .updateTable('webhook_deliveries')
      .set({ next_attempt_at: new Date(Date.now() - 60_000) })
      .execute();
    const eventIds = (await w.ctx.db.selectFrom('events').select('id').execute()).map((e) => e.id);
    expect(eventIds).toHaveLength(EVENTS);

    const first = startWorkerProcess();
    await until(() => receiver.received.length >= 10, 30_000);
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const claimed = await w.ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('due_at', 'is not', null)
      .where('locked_by', 'is not', null)
      .execute();
    expect(claimed.length).toBeGreaterThan(0);

    const second = startWorkerProcess();
    await until(async () => {
      const left = await w.ctx.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('status', '!=', 'succeeded')
        .execute();
      return left.length === 0;
    }, 60_000);
    second.kill('SIGTERM');
    await new Promise((resolve) => second.once('exit', resolve));

    const seen = new Set(receiver.received.map((m) => String(m.headers['webhook-id'])));
    for (const id of eventIds) expect(seen.has(id)).toBe(true);
    const stuck = await w.ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('status', '=', 'pending')
      .execute();
    expect(stuck).toHaveLength(0);
    const queued = await w.ctx.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('due_at', 'is not', null)
      .execute();
    expect(queued).toHaveLength(0);
  }, 120_000);
});
