import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DeliveryWorker, startDeliveryWorker } from '../../src/delivery/worker.ts';
import { ManualClock } from '../../src/lib/clock.ts';
import { insertEndpoint, type Receiver, startReceiver } from '../delivery/support.ts';
import { type CompanyFixture, call, createCompany } from '../support/api.ts';
import { until } from '../support/eventually.ts';
import { onCitus, startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * A Citus worker node stopped and started again while shipments are written (issue 42): every
 * delivery owed for an event that was written arrives at the receiver at least once.
 *
 * Needs, besides the Citus project (WAYBILL_TEST_CITUS_URL), a command that stops and starts one
 * worker node of that cluster: WAYBILL_TEST_CITUS_NODE_CTL, run by the shell with `stop` or
 * `start` appended (for the local cluster of docs/operations.md, e.g.
 * `/work/citus/cluster.sh node 9702`, which runs `pg_ctl stop -m fast` and `pg_ctl start`). The
 * node stopped is the one on WAYBILL_TEST_CITUS_NODE_PORT (9702 by default). Stopping a node of
 * the shared cluster fails whatever else runs on it meanwhile: run this file alone.
 */
const nodeCtl = process.env.WAYBILL_TEST_CITUS_NODE_CTL;
const nodePort = Number(process.env.WAYBILL_TEST_CITUS_NODE_PORT ?? 9702);
const run = promisify(execFile);

async function node(action: 'stop' | 'start'): Promise<void> {
  await run('/bin/sh', ['-c', `${nodeCtl} ${action}`], { timeout: 120_000 });
}

describe.skipIf(!onCitus || !nodeCtl)('a Citus worker node stopped and started again', () => {
  const clock = new ManualClock('2026-11-21T12:00:00.000Z');
  let w: TestWaybill;
  let receiver: Receiver;
  let worker: DeliveryWorker | undefined;
  let ticking: ReturnType<typeof setInterval> | undefined;
  let stopped = false;

  beforeAll(async () => {
    w = await startWaybill({ clock });
    receiver = await startReceiver();
    // The injected clock follows real time: leases and retries come due as they would.
    ticking = setInterval(() => clock.advance(100), 100);
  });
  afterAll(async () => {
    if (stopped) await node('start');
    if (ticking) clearInterval(ticking);
    await worker?.stop();
    await receiver?.close();
    await w?.close();
  });

  /** The port of the node holding the company's shard group. */
  async function nodeOf(tenantId: string): Promise<number> {
    const { rows } = await sql<{ port: number }>`
      SELECT n.nodeport AS port FROM pg_dist_placement p JOIN pg_dist_node n ON n.groupid = p.groupid
      WHERE p.shardid = get_shard_id_for_distribution_column('customer_accounts', ${tenantId}::text)`.execute(
      w.ctx.db,
    );
    return rows[0]?.port ?? 0;
  }

  it('delivers every event that was written at least once, those of its companies once it is back', async () => {
    // Companies on both worker nodes, each with an endpoint at the receiver.
    const companies: Array<CompanyFixture & { port: number }> = [];
    for (let tries = 0; tries < 40; tries++) {
      const company = await createCompany(w, `Company ${tries}`);
      const port = await nodeOf(company.tenantId);
      if (companies.filter((c) => c.port === port).length >= 3) continue;
      companies.push({ ...company, port });
      await insertEndpoint(w, {
        tenantId: company.tenantId,
        url: receiver.url,
        eventTypes: ['shipment.created'],
      });
      if (companies.filter((c) => c.port === nodePort).length >= 3 && companies.length >= 6) break;
    }
    expect(companies.filter((c) => c.port === nodePort).length).toBeGreaterThan(0);
    expect(companies.filter((c) => c.port !== nodePort).length).toBeGreaterThan(0);
    worker = startDeliveryWorker(w.ctx, { pollMs: 200, jitter: () => 0 });

    const received = () => new Set(receiver.received.map((m) => String(m.headers['webhook-id'])));
    // Shipments written in rounds; the node goes down after a few and comes back a few later.
    const written: string[] = [];
    const refused: Array<{ tenantId: string; status: number; round: number }> = [];
    for (let round = 0; round < 30; round++) {
      if (round === 8) {
        await node('stop');
        stopped = true;
      }
      if (round === 20) {
        // While the node is away, the other node's companies are delivered to: they do not wait.
        const others = companies.filter((c) => c.port !== nodePort).map((c) => c.tenantId);
        await until(async () => {
          const events = await w.ctx.db
            .selectFrom('events')
            .select('id')
            .where('tenant_id', 'in', others)
            .where('type', '=', 'shipment.created')
            .execute();
          const got = received();
          return events.length >= others.length * 20 && events.every((event) => got.has(event.id));
        }, 60_000);
        await node('start');
        stopped = false;
      }
      for (const company of companies) {
        const response = await call(w, 'POST', '/v1/shipments', {
          token: company.liveToken,
          body: { recipient_name: 'Ada Lovelace', currency: 'EUR', external_ref: `loss-${round}` },
        });
        if (response.status === 201) written.push(response.body.id as string);
        else refused.push({ tenantId: company.tenantId, status: response.status, round });
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The node was away: writes for its companies were refused (as the database being away: 503),
    // those for the other node's went through (docs/operations.md, "A node's loss").
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused.map((r) => r.status))).toEqual(new Set([503]));
    const portOf = new Map(companies.map((c) => [c.tenantId, c.port]));
    expect(new Set(refused.map((r) => portOf.get(r.tenantId)))).toEqual(new Set([nodePort]));
    // Back, it takes writes again.
    expect(refused.filter((r) => r.round >= 25)).toEqual([]);

    // What is owed: a delivery for each shipment.created event written (a write refused with 503
    // may still have committed; its event is owed then too).
    const tenants = companies.map((c) => c.tenantId);
    const owed = () =>
      w.ctx.db
        .selectFrom('events')
        .select(['id', 'shipment_id'])
        .where('tenant_id', 'in', tenants)
        .where('type', '=', 'shipment.created')
        .execute();
    await until(async () => {
      const events = await owed();
      const got = received();
      return events.every((event) => got.has(event.id));
    }, 120_000);

    const events = await owed();
    // Every shipment answered 201 has its event, and every event reached the receiver.
    const shipments = new Set(events.map((e) => e.shipment_id));
    expect(written.filter((id) => !shipments.has(id))).toEqual([]);
    const got = received();
    expect(events.filter((event) => !got.has(event.id))).toEqual([]);
    // And the log says so: no delivery of theirs is left pending or failed.
    await until(async () => {
      const left = await w.ctx.db
        .selectFrom('webhook_deliveries')
        .select('id')
        .where('tenant_id', 'in', tenants)
        .where('status', '<>', 'succeeded')
        .execute();
      return left.length === 0;
    }, 60_000);
  }, 300_000);
});
