import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OUTBOUND_SENDS_PER_ACCOUNT,
  OUTBOUND_SENDS_PER_HOST,
  OUTBOUND_WINDOW_MS,
} from '../../src/modules/outbound/budget.ts';
import { expectProblem } from '../http/expect.ts';
import { call, createCompany } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { createMerchant } from '../webhooks/api/support.ts';

/**
 * Whose budget and which destination (issue 30 item 2, decision 0032): an owner who makes merchant
 * accounts, or names one machine by several names, does not send past the caps. A real receiver
 * on 127.0.0.1; the names resolve through the guard's resolver, as DNS would answer them.
 */
let w: TestWaybill;
let server: Server;
let received = 0;
let port = 0;

beforeAll(async () => {
  w = await startWaybill();
  w.ctx.resolveHost = async (name) =>
    ({
      'one.machine.test': ['127.0.0.1'],
      'two.machine.test': ['127.0.0.1'],
      'three.machine.test': ['127.0.0.1'],
    })[name] ?? [];
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await w?.close();
});

function nextWindow(): void {
  const now = w.clock.now().getTime();
  w.clock.set(new Date(now - (now % OUTBOUND_WINDOW_MS) + OUTBOUND_WINDOW_MS));
}

async function endpointOf(token: string, url: string): Promise<string> {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token,
    body: { url, event_types: ['shipment.created'] },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

const testSend = (token: string, endpointId: string) =>
  call(w, 'POST', `/v1/webhook-endpoints/${endpointId}/test`, { token, body: {} });

describe('the outbound budget counts companies and addresses', () => {
  it("a company's merchant accounts spend from the company's budget", async () => {
    nextWindow();
    const company = await createCompany(w, 'Many Merchants');
    const url = `http://127.0.0.1:${port}/hook`;
    const senders = [{ token: company.testToken, endpoint: await endpointOf(company.testToken, url) }];
    for (let m = 0; m < 3; m++) {
      const merchant = await createMerchant(w, company, 'test');
      senders.push({ token: merchant.token, endpoint: await endpointOf(merchant.token, url) });
    }
    for (let i = 0; i < OUTBOUND_SENDS_PER_ACCOUNT; i++) {
      const sender = senders[i % senders.length] as (typeof senders)[number];
      expect((await testSend(sender.token, sender.endpoint)).status).toBe(200);
    }
    const before = received;
    for (const sender of senders) {
      const refused = await testSend(sender.token, sender.endpoint);
      expectProblem(refused, 429, 'rate_limited');
      expect(refused.body.detail).toContain('for this account');
    }
    expect(received).toBe(before);
  });

  it('one machine named by several names (and by its address) is one destination', async () => {
    nextWindow();
    const names = ['one.machine.test', 'two.machine.test', 'three.machine.test'];
    const sendsPerName = OUTBOUND_SENDS_PER_HOST / names.length;
    expect(sendsPerName).toBeLessThanOrEqual(OUTBOUND_SENDS_PER_ACCOUNT);
    const before = received;
    for (const name of names) {
      // A company of its own for each name: the account budget is not what stops it.
      const company = await createCompany(w, `Names ${name}`);
      const endpoint = await endpointOf(company.testToken, `http://${name}:${port}/hook`);
      for (let i = 0; i < sendsPerName; i++)
        expect((await testSend(company.testToken, endpoint)).status).toBe(200);
    }
    expect(received - before).toBe(OUTBOUND_SENDS_PER_HOST);
    for (const url of [`http://one.machine.test:${port}/other`, `http://127.0.0.1:${port}/hook`]) {
      const company = await createCompany(w, 'Fresh');
      const refused = await testSend(company.testToken, await endpointOf(company.testToken, url));
      expectProblem(refused, 429, 'rate_limited');
      expect(refused.body.detail).toContain('to 127.0.0.1');
    }
    expect(received - before).toBe(OUTBOUND_SENDS_PER_HOST);

    nextWindow();
    const company = await createCompany(w, 'Next Window');
    expect(
      (
        await testSend(
          company.testToken,
          await endpointOf(company.testToken, `http://two.machine.test:${port}/h`),
        )
      ).status,
    ).toBe(200);
  });
});
