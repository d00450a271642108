import type { ServerResponse } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment } from '../support/api.ts';
import {
  attemptsOf,
  deliveriesOf,
  insertEndpoint,
  type Receiver,
  startReceiver,
  testWorker,
  useWaybillAndReceiver,
} from './support.ts';

/** Answers a receiver may give that a text column cannot hold, or that never finish. */
const strangeAnswers: Record<
  string,
  { answer: (res: ServerResponse) => void; status: number; head: Buffer }
> = {
  'a NUL byte': { answer: (res) => res.end('ok\0nul'), status: 200, head: Buffer.from('ok\0nul') },
  'invalid UTF-8': {
    answer: (res) => res.end(Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0xc3])),
    status: 200,
    head: Buffer.from([0x6f, 0x6b, 0xff, 0xfe, 0xc3]),
  },
  binary: {
    answer: (res) => res.end(Buffer.from(Array.from({ length: 256 }, (_, i) => i))),
    status: 200,
    head: Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
  },
  'a 1 MB body': {
    answer: (res) => {
      res.statusCode = 500;
      res.end(Buffer.alloc(1024 * 1024, 0x61));
    },
    status: 500,
    head: Buffer.alloc(4096, 0x61),
  },
  'a body that never ends': {
    answer: (res) => {
      res.writeHead(200);
      res.write('partial\0');
    },
    status: 200,
    head: Buffer.from('partial\0'),
  },
  'headers only': {
    answer: (res) => {
      res.writeHead(202);
      res.flushHeaders();
    },
    status: 202,
    head: Buffer.alloc(0),
  },
};

describe("a receiver's answer never breaks the delivery log", () => {
  const env = useWaybillAndReceiver();
  const receivers: Receiver[] = [];
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
  });

  it('records every strange answer in one batch, beside the plain 200s of other endpoints', async () => {
    const { w, receiver } = env;
    const company = await createCompany(w);
    const plain = await insertEndpoint(w, { tenantId: company.tenantId, url: receiver.url });
    const strange = new Map<string, string>();
    for (const [name, case_] of Object.entries(strangeAnswers)) {
      const r = await startReceiver((_m, res) => case_.answer(res));
      receivers.push(r);
      strange.set(name, (await insertEndpoint(w, { tenantId: company.tenantId, url: r.url })).id);
    }
    // A short deadline: the never-ending answers are cut at it, with what arrived kept.
    const worker = testWorker(w, { deadlineMs: 1500 });
    await createShipment(w, company.liveToken);
    await worker.tick();
    await worker.stop();

    const [ok] = await deliveriesOf(w, plain.id);
    expect(ok?.status).toBe('succeeded');
    for (const [name, endpointId] of strange) {
      const expected = strangeAnswers[name];
      const [delivery] = await deliveriesOf(w, endpointId);
      expect(delivery?.attempt_count, name).toBe(1);
      const queued = await w.ctx.db
        .selectFrom('webhook_deliveries')
        .select('locked_by')
        .where('id', '=', delivery?.id ?? '')
        .where('due_at', 'is not', null)
        .executeTakeFirst();
      // Retried: back in line with no lease; delivered: out of the queue.
      expect(queued?.locked_by ?? null, name).toBeNull();
      expect(queued !== undefined, name).toBe(delivery?.status === 'pending');
      expect(delivery?.last_status_code, name).toBe(expected?.status);
      expect(delivery?.status, name).toBe((expected?.status ?? 0) < 300 ? 'succeeded' : 'pending');
      const stored = await w.ctx.db
        .selectFrom('webhook_attempt_log')
        .select('response_body')
        .where('delivery_id', '=', delivery?.id as string)
        .executeTakeFirstOrThrow();
      expect(Buffer.from(stored.response_body ?? []).equals(expected?.head ?? Buffer.alloc(1)), name).toBe(
        true,
      );
    }
  });

  it('shows a NUL answer through the test send and the delivery log as JSON', async () => {
    const { w } = env;
    const company = await createCompany(w);
    const nul = await startReceiver((_m, res) => res.end('ok\0nul'));
    receivers.push(nul);
    const created = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: nul.url, event_types: ['shipment.created'] },
    });
    expect(created.status).toBe(201);
    const sent = await call(w, 'POST', `/v1/webhook-endpoints/${created.body.id}/test`, {
      token: company.liveToken,
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status_code: 200, response_body: 'ok\u0000nul', error: null });
    const detail = await call(w, 'GET', `/v1/webhook-deliveries/${sent.body.delivery_id}`, {
      token: company.liveToken,
    });
    expect(detail.status).toBe(200);
    expect(detail.body.attempts[0].response_body).toBe('ok\u0000nul');
  });

  it('records the batch of an endpoint deleted mid-flight without losing the other attempts in it', async () => {
    const { w } = env;
    const company = await createCompany(w);
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // Both answers come back together, so that their attempts share one batch.
    const slow = await startReceiver((_m, res) => {
      void held.then(() => res.end('late'));
    });
    const other = await startReceiver((_m, res) => {
      void held.then(() => res.end('fine'));
    });
    receivers.push(slow, other);
    const kept = await insertEndpoint(w, { tenantId: company.tenantId, url: other.url });
    const doomed = await insertEndpoint(w, { tenantId: company.tenantId, url: slow.url });
    const worker = testWorker(w);
    await createShipment(w, company.liveToken);
    const ticking = worker.tick();
    // The slow receiver has the message; its endpoint goes away before the answer comes back.
    while (slow.received.length + other.received.length < 2)
      await new Promise((resolve) => setTimeout(resolve, 10));
    await w.ctx.db.deleteFrom('webhook_endpoints').where('id', '=', doomed.id).execute();
    release();
    await ticking;
    await worker.stop();
    const [delivery] = await deliveriesOf(w, kept.id);
    expect(delivery?.status).toBe('succeeded');
    expect(await attemptsOf(w, delivery?.id as string)).toHaveLength(1);
  });
});
