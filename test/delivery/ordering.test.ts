import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { claimDue } from '../../src/delivery/claim.ts';
import { DAY } from '../../src/lib/clock.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';
import { checkReceived } from '../support/message-check.ts';
import {
  deliveriesOf,
  type Received,
  type Receiver,
  runSchedule,
  startTwoWorkers,
  testWorker,
  useWaybillAndReceiver,
} from './support.ts';

const ORDERED_TYPES = ['shipment.created', 'shipment.status_changed'];
/** After `confirmed` (the status a shipment is created in): each move is one more message. */
const MOVES = ['picked_up', 'in_transit', 'out_for_delivery', 'delivered'];

async function createEndpoint(
  w: TestWaybill,
  company: CompanyFixture,
  url: string,
  controls: Record<string, unknown>,
): Promise<{ id: string; secret: string }> {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token: company.liveToken,
    body: { url, event_types: ORDERED_TYPES, ...controls },
  });
  if (created.status !== 201) throw new Error(`endpoint failed: ${created.text}`);
  return { id: created.body.id, secret: created.body.secret };
}

async function move(
  w: TestWaybill,
  company: CompanyFixture,
  shipmentId: string,
  status: string,
): Promise<void> {
  const moved = await call(w, 'POST', `/v1/shipments/${shipmentId}/status`, {
    token: company.liveToken,
    body: { status },
  });
  if (moved.status !== 200) throw new Error(`move failed: ${moved.text}`);
}

/** What a receiver reads of a shipment message: the shipment and the status it reports. */
function shipmentStatus(message: Received): { shipment: string; status: string } {
  const body = JSON.parse(message.body) as Json;
  return { shipment: body.data.shipment.id, status: body.data.status };
}

/** The receiver answers `code` to the shipment messages `refused` picks, 200 to the rest. */
function refuseWhen(
  receiver: Receiver,
  code: number,
  refused: (message: { shipment: string; status: string }) => boolean,
): void {
  receiver.answer = (message, res) => {
    if (!refused(shipmentStatus(message))) {
      res.end('ok');
      return;
    }
    res.writeHead(code);
    res.end('not now');
  };
}

describe('ordering per shipment (issue 23)', () => {
  const env = useWaybillAndReceiver();

  it("a failing message holds back only its own shipment's later messages, which use no attempts; once it succeeds they go, in order", async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url, { ordering: 'per_shipment' });
    const held = await createShipment(w, company.liveToken);
    const flowing = await createShipment(w, company.liveToken);
    for (const status of MOVES.slice(0, 2)) {
      await move(w, company, held.id, status);
      await move(w, company, flowing.id, status);
    }
    let refuse = true;
    refuseWhen(
      receiver,
      500,
      ({ shipment, status }) => refuse && shipment === held.id && status === 'confirmed',
    );
    const start = receiver.received.length;
    const worker = testWorker(w);
    try {
      await worker.tick();
      const arrived = () => receiver.received.slice(start).map(shipmentStatus);
      // The other shipment went, all of it, in order; the held one only its first message.
      expect(
        arrived()
          .filter((m) => m.shipment === flowing.id)
          .map((m) => m.status),
      ).toEqual(['confirmed', 'picked_up', 'in_transit']);
      expect(
        arrived()
          .filter((m) => m.shipment === held.id)
          .map((m) => m.status),
      ).toEqual(['confirmed']);
      const attempts = async () =>
        (await deliveriesOf(w, endpoint.id))
          .filter((d) => d.event_id !== null)
          .map((d) => d.attempt_count)
          .sort();
      expect(await attempts()).toEqual([0, 0, 1, 1, 1, 1]);

      // Up to its retry (30 s): nothing of the held shipment goes, however often workers claim.
      w.clock.advance(29_999);
      await worker.tick();
      const another = testWorker(w);
      await another.tick();
      await another.stop();
      expect(receiver.received.length - start).toBe(4);
      expect(await attempts()).toEqual([0, 0, 1, 1, 1, 1]);

      refuse = false;
      w.clock.advance(1);
      await worker.tick();
      expect(
        arrived()
          .filter((m) => m.shipment === held.id)
          .map((m) => m.status),
      ).toEqual(['confirmed', 'confirmed', 'picked_up', 'in_transit']);
      // The messages that waited went on their first attempt.
      expect(await attempts()).toEqual([1, 1, 1, 1, 1, 2]);
    } finally {
      await worker.stop();
      receiver.answer = (_m, res) => res.end('ok');
    }
  });

  it('the next message goes once the one before fails for good (3 days), and a replay is outside the order', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url, { ordering: 'per_shipment' });
    const shipment = await createShipment(w, company.liveToken);
    await move(w, company, shipment.id, 'picked_up');
    await move(w, company, shipment.id, 'in_transit');
    refuseWhen(receiver, 500, ({ status }) => status === 'confirmed');
    const start = receiver.received.length;
    const worker = testWorker(w);
    try {
      await worker.tick();
      const statuses = () => receiver.received.slice(start).map((m) => shipmentStatus(m).status);
      expect(statuses()).toEqual(['confirmed']);
      // A replay of a waiting message goes at once: a person asked for it.
      const deliveries = await deliveriesOf(w, endpoint.id);
      const waiting = deliveries.find((d) => d.attempt_count === 0) as (typeof deliveries)[number];
      const replayed = await call(w, 'POST', `/v1/webhook-deliveries/${waiting.id}/replay`, {
        token: company.liveToken,
      });
      expect(replayed.status).toBe(200);
      expect(statuses()).toHaveLength(2);
      const replayedStatus = statuses()[1];
      // The replay succeeded its delivery: it is not sent again. The first message is retried
      // for three days and fails for good; only then does the last one go.
      await runSchedule(w, endpoint.id, worker, new Date(w.clock.now().getTime() + 4 * DAY));
      const after = statuses().slice(2);
      expect(after.filter((s) => s === 'confirmed')).toHaveLength(8);
      expect(after.at(-1)).toBe(replayedStatus === 'picked_up' ? 'in_transit' : 'picked_up');
      const outcomes = (await deliveriesOf(w, endpoint.id))
        .map((d) => `${d.status}/${d.attempt_count}`)
        .sort();
      expect(outcomes).toEqual(['failed/9', 'succeeded/1', 'succeeded/1']);
    } finally {
      await worker.stop();
      receiver.answer = (_m, res) => res.end('ok');
    }
  });

  it("a crashed worker's message keeps its shipment waiting until its lease ends; then the shipment goes on in order", async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url, { ordering: 'per_shipment' });
    const shipment = await createShipment(w, company.liveToken);
    await move(w, company, shipment.id, 'picked_up');
    // A worker claims the first message and dies before sending it (its lease is a minute).
    const now = w.clock.now();
    const crashed = await claimDue(
      w.ctx.db,
      {
        workerId: 'wrk_crashed',
        now,
        leaseUntil: new Date(now.getTime() + 60_000),
        limit: 10,
        perEndpoint: 10,
        room: new Map(),
        after: '',
      },
      w.ctx.database.distributed,
    );
    expect(crashed.rows.filter((row) => row.endpoint_id === endpoint.id).map((row) => row.in_line)).toEqual([
      true,
    ]);
    const start = receiver.received.length;
    const worker = testWorker(w);
    try {
      w.clock.advance(59_000);
      await worker.tick();
      expect(receiver.received.length - start).toBe(0);
      w.clock.advance(1_001);
      await worker.tick();
      expect(receiver.received.slice(start).map((m) => shipmentStatus(m).status)).toEqual([
        'confirmed',
        'picked_up',
      ]);
    } finally {
      await worker.stop();
    }
  });

  it('set on an endpoint with messages waiting, they join their lines; set back to none, they flow at once', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const endpoint = await createEndpoint(w, company, receiver.url, {});
    const shipment = await createShipment(w, company.liveToken);
    for (const status of MOVES.slice(0, 2)) await move(w, company, shipment.id, status);
    const patch = (ordering: string) =>
      call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
        token: company.liveToken,
        body: { ordering },
      });
    expect((await patch('per_shipment')).body.ordering).toBe('per_shipment');
    refuseWhen(receiver, 503, ({ status }) => status === 'confirmed');
    const start = receiver.received.length;
    const worker = testWorker(w);
    try {
      await worker.tick();
      const statuses = () => receiver.received.slice(start).map((m) => shipmentStatus(m).status);
      expect(statuses()).toEqual(['confirmed']);
      expect((await patch('none')).body.ordering).toBe('none');
      await worker.tick();
      expect(statuses().slice(1).sort()).toEqual(['in_transit', 'picked_up']);
    } finally {
      await worker.stop();
      receiver.answer = (_m, res) => res.end('ok');
    }
  });
});

/**
 * A receiver that answers after a random few milliseconds and notes, per shipment, the order of
 * arrival and whether two of its messages were ever in flight at once.
 */
async function lineWatchingReceiver() {
  const lines = new Map<string, string[]>();
  const inFlight = new Map<string, number>();
  let overlaps = 0;
  let busiest = 0;
  let open = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const message = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      checkReceived(message, 'line-watching receiver');
      const { shipment, status } = shipmentStatus(message);
      lines.set(shipment, [...(lines.get(shipment) ?? []), status]);
      const now = (inFlight.get(shipment) ?? 0) + 1;
      inFlight.set(shipment, now);
      if (now > 1) overlaps += 1;
      open += 1;
      busiest = Math.max(busiest, open);
      setTimeout(
        () => {
          inFlight.set(shipment, (inFlight.get(shipment) ?? 1) - 1);
          open -= 1;
          res.end('ok');
        },
        Math.floor(Math.random() * 15),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ordered`,
    lines,
    overlaps: () => overlaps,
    busiest: () => busiest,
    count: () => [...lines.values()].reduce((sum, line) => sum + line.length, 0),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('ordering per shipment with two workers (issue 23)', () => {
  const env = useWaybillAndReceiver();
  it("one shipment's messages arrive one at a time and in event order, while shipments go in parallel", async () => {
    const { w } = env;
    const SHIPMENTS = 24;
    const company = await createCompany(w);
    const receiver = await lineWatchingReceiver();
    try {
      await createEndpoint(w, company, receiver.url, { ordering: 'per_shipment' });
      const shipments: string[] = [];
      for (let i = 0; i < SHIPMENTS; i++) shipments.push((await createShipment(w, company.liveToken)).id);
      // Moves interleaved across shipments, half of them queued before the workers start.
      for (const status of MOVES.slice(0, 2)) for (const id of shipments) await move(w, company, id, status);
      const stop = startTwoWorkers(w);
      try {
        for (const status of MOVES.slice(2)) for (const id of shipments) await move(w, company, id, status);
        const expected = SHIPMENTS * (1 + MOVES.length);
        const started = performance.now();
        while (receiver.count() < expected && performance.now() - started < 60_000)
          await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        await stop();
      }
      for (const id of shipments) expect(receiver.lines.get(id)).toEqual(['confirmed', ...MOVES]);
      expect(receiver.overlaps()).toBe(0);
      // Other shipments kept flowing beside each one in flight.
      expect(receiver.busiest()).toBeGreaterThan(1);
    } finally {
      await receiver.close();
    }
  }, 90_000);
});
