import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDeliveryWorker } from '../../src/delivery/worker.ts';
import { createCompany, createShipment } from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { checkReceived } from '../support/message-check.ts';
import { insertEndpoint } from './support.ts';

/** A receiver that counts the requests it holds open at once, and answers (or not) as told. */
async function countingReceiver(answer: (res: ServerResponse) => void) {
  const state = { open: 0, maxOpen: 0, received: 0, url: '', server: null as Server | null };
  state.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    state.open += 1;
    state.maxOpen = Math.max(state.maxOpen, state.open);
    res.on('close', () => {
      state.open -= 1;
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      checkReceived({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') }, state.url);
      state.received += 1;
      answer(res);
    });
  });
  await new Promise<void>((resolve) => state.server?.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}/hook`;
  return state;
}

let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

describe('fairness between targets', () => {
  it('an endpoint that never answers keeps its few slots; a fast one earns more and is not held up', async () => {
    const stuck = await countingReceiver(() => {});
    // Fast, yet slow enough that requests overlap whatever a loaded machine's claims take: an answer
    // in 5 ms was over before a slow claim brought the next rows, and the count never passed 8.
    const fast = await countingReceiver((res) => setTimeout(() => res.end('ok'), 50));
    try {
      const company = await createCompany(w);
      await insertEndpoint(w, {
        tenantId: company.tenantId,
        url: stuck.url,
        eventTypes: ['shipment.created'],
      });
      await insertEndpoint(w, {
        tenantId: company.tenantId,
        url: fast.url,
        eventTypes: ['shipment.created'],
      });
      const count = 120;
      for (let i = 0; i < count; i++)
        await createShipment(w, company.liveToken, { external_ref: `fair-${i}` });

      // A deadline far beyond the test: the stuck requests must not time out (and free their slots)
      // however slowly a loaded machine gets through the fast endpoint's messages.
      const worker = startDeliveryWorker(w.ctx, { pollMs: 50, jitter: () => 0, deadlineMs: 120_000 });
      try {
        // Every fast delivery arrives while the stuck endpoint still holds its first requests.
        await eventually(async () => fast.received === count, 'the fast endpoint to get everything');
        expect(stuck.received).toBeLessThanOrEqual(8);
        expect(stuck.maxOpen).toBeLessThanOrEqual(8);
        // The fast endpoint earned more than the starting 8 slots.
        expect(fast.maxOpen).toBeGreaterThan(8);
      } finally {
        stuck.server?.closeAllConnections();
        await worker.stop();
      }
    } finally {
      for (const receiver of [stuck, fast]) {
        receiver.server?.closeAllConnections();
        receiver.server?.close();
      }
    }
  });
});
