import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OUTBOUND_SENDS_PER_ACCOUNT,
  OUTBOUND_SENDS_PER_HOST,
  OUTBOUND_WINDOW_MS,
} from '../../src/modules/outbound/budget.ts';
import { expectProblem } from '../http/expect.ts';
import { listing, registerPublishable, submit } from '../store/support.ts';
import { type ApiResponse, call, createCompany, type Json, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient } from '../web/page-client.ts';

/**
 * One outbound budget (decision 0028): every route that makes Waybill send a request for someone
 * spends from the caller's account and the target host's budget of the window; over either, 429
 * `rate_limited` with Retry-After, and nothing is sent or changed. Real receivers on two loopback
 * hosts (127.0.0.1 and 127.0.0.2); time moves with the ManualClock.
 */

interface Host {
  url: string;
  received: number;
  close(): Promise<void>;
}

/** A receiver on the given loopback address that answers 401 to anything (the checks' wrong signature included). */
async function receiverOn(address: string): Promise<Host> {
  const host: Host = { url: '', received: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      host.received++;
      res.writeHead(req.headers['webhook-signature'] ? 204 : 400).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  host.url = `http://${address}:${(server.address() as AddressInfo).port}/hook`;
  host.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return host;
}

let w: TestWaybill;
let one: Host;
let two: Host;

beforeAll(async () => {
  w = await startWaybill();
  one = await receiverOn('127.0.0.1');
  two = await receiverOn('127.0.0.2');
});
afterAll(async () => {
  await Promise.all([one?.close(), two?.close()]);
  await w?.close();
});

/** Moves the clock to the start of the next window: every budget is whole again. */
function nextWindow(): void {
  const now = w.clock.now().getTime();
  w.clock.set(new Date(now - (now % OUTBOUND_WINDOW_MS) + OUTBOUND_WINDOW_MS));
}

function expectRefused(response: ApiResponse<Json>): void {
  expectProblem(response, 429, 'rate_limited');
  const retryAfter = Number(response.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(OUTBOUND_WINDOW_MS / 1000);
}

async function appEventTest(token: string, appId: string) {
  return call(w, 'POST', `/v1/developer/apps/${appId}/event-messages/test`, { token });
}

describe('the outbound budget', () => {
  it('submission checks: submit and withdraw until refused; another account still submits; the next window allows again', async () => {
    nextWindow();
    const developer = await signUpPerson(w, 'Looping Developer');
    const app = await registerPublishable(w, developer, one.url);
    const body = { listing: listing(app.scopes) };
    // Each submission sends two messages (the wrong signature, then the signed test).
    const rounds = OUTBOUND_SENDS_PER_ACCOUNT / 2;
    for (let i = 0; i < rounds; i++) {
      const submitted = await submit(w, developer, app.id, body);
      expect(submitted.status, submitted.text).toBe(201);
      const withdrawn = await call(
        w,
        'POST',
        `/v1/developer/apps/${app.id}/submissions/${submitted.body.id}/withdraw`,
        { token: developer.token },
      );
      expect(withdrawn.status).toBe(200);
    }
    const sentBefore = one.received;
    const refused = await submit(w, developer, app.id, body, 'retry-me');
    expectRefused(refused);
    // "Check my events URL" spends from the same budget.
    expectRefused(
      await call(w, 'POST', `/v1/developer/apps/${app.id}/events-url-checks`, { token: developer.token }),
    );
    // Nothing was sent, and no submission was made.
    expect(one.received).toBe(sentBefore);
    const listed = await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions?limit=100`, {
      token: developer.token,
    });
    expect(listed.body.data).toHaveLength(rounds);
    expect(listed.body.data.every((s: Json) => s.status === 'withdrawn')).toBe(true);

    // Another account, to the same host, is still allowed.
    const other = await signUpPerson(w, 'Other Developer');
    const otherApp = await registerPublishable(w, other, one.url);
    expect((await submit(w, other, otherApp.id, { listing: listing(otherApp.scopes) })).status).toBe(201);

    // The window passes: allowed again, the refused request's Idempotency-Key included (a 429 is
    // not kept as its answer).
    nextWindow();
    expect((await submit(w, developer, app.id, body, 'retry-me')).status).toBe(201);
  });

  it('app-event test and replay: refused past the account budget, without a message made', async () => {
    nextWindow();
    const developer = await signUpPerson(w, 'Testing Developer');
    const app = await registerPublishable(w, developer, two.url);
    for (let i = 0; i < OUTBOUND_SENDS_PER_ACCOUNT; i++) {
      const tested = await appEventTest(developer.token, app.id);
      expect(tested.status, tested.text).toBe(200);
    }
    const messages = async () =>
      (
        await call(w, 'GET', `/v1/developer/apps/${app.id}/event-messages?limit=100`, {
          token: developer.token,
        })
      ).body.data as Json[];
    const before = await messages();
    expect(before).toHaveLength(OUTBOUND_SENDS_PER_ACCOUNT);
    const sentBefore = two.received;
    expectRefused(await appEventTest(developer.token, app.id));
    expectRefused(
      await call(w, 'POST', `/v1/developer/apps/${app.id}/event-messages/${before[0].id}/replay`, {
        token: developer.token,
      }),
    );
    expect(two.received).toBe(sentBefore);
    expect(await messages()).toHaveLength(OUTBOUND_SENDS_PER_ACCOUNT);
    expect((await messages())[0].attempts).toHaveLength(1);

    nextWindow();
    const replayed = await call(
      w,
      'POST',
      `/v1/developer/apps/${app.id}/event-messages/${before[0].id}/replay`,
      {
        token: developer.token,
      },
    );
    expect(replayed.status, replayed.text).toBe(200);
  });

  it('a host is sent at most its budget, whichever accounts ask; another host is still allowed', async () => {
    nextWindow();
    const accounts = OUTBOUND_SENDS_PER_HOST / OUTBOUND_SENDS_PER_ACCOUNT;
    for (let a = 0; a < accounts; a++) {
      const developer = await signUpPerson(w, `Crowd ${a}`);
      const app = await registerPublishable(w, developer, one.url);
      for (let i = 0; i < OUTBOUND_SENDS_PER_ACCOUNT; i++)
        expect((await appEventTest(developer.token, app.id)).status).toBe(200);
    }
    const fresh = await signUpPerson(w, 'Fresh Developer');
    const toOne = await registerPublishable(w, fresh, one.url);
    const toTwo = await registerPublishable(w, fresh, two.url);
    const refused = await appEventTest(fresh.token, toOne.id);
    expectRefused(refused);
    expect(refused.body.detail).toContain('127.0.0.1');
    // The refusal spent nothing of the account's budget: another host takes all of it.
    for (let i = 0; i < OUTBOUND_SENDS_PER_ACCOUNT; i++)
      expect((await appEventTest(fresh.token, toTwo.id)).status).toBe(200);
    expectRefused(await appEventTest(fresh.token, toTwo.id));

    nextWindow();
    expect((await appEventTest(fresh.token, toOne.id)).status).toBe(200);
  });

  it('endpoint test sends, replays and bulk replays: one budget per owner; another company still sends', async () => {
    nextWindow();
    const company = await createCompany(w, 'Testing Company');
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: two.url, event_types: ['shipment.created'] },
    });
    expect(endpoint.status).toBe(201);
    const id = endpoint.body.id as string;
    const testSend = (token = company.testToken, endpointId = id) =>
      call(w, 'POST', `/v1/webhook-endpoints/${endpointId}/test`, { token, body: {} });
    let deliveryId = '';
    for (let i = 0; i < OUTBOUND_SENDS_PER_ACCOUNT; i++) {
      const sent = await testSend();
      expect(sent.status, sent.text).toBe(200);
      deliveryId = sent.body.delivery_id;
    }
    const deliveries = async () =>
      (
        await call(w, 'GET', `/v1/webhook-endpoints/${id}/deliveries?limit=100`, {
          token: company.testToken,
        })
      ).body.data as Json[];
    expect(await deliveries()).toHaveLength(OUTBOUND_SENDS_PER_ACCOUNT);
    const sentBefore = two.received;
    expectRefused(await testSend());
    expectRefused(
      await call(w, 'POST', `/v1/webhook-deliveries/${deliveryId}/replay`, { token: company.testToken }),
    );
    expectRefused(
      await call(w, 'POST', `/v1/webhook-endpoints/${id}/deliveries/replay`, { token: company.testToken }),
    );
    expect(two.received).toBe(sentBefore);
    expect(await deliveries()).toHaveLength(OUTBOUND_SENDS_PER_ACCOUNT);

    // Another company, to the same host, is still allowed.
    const other = await createCompany(w, 'Other Company');
    const otherEndpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: other.testToken,
      body: { url: two.url, event_types: ['shipment.created'] },
    });
    expect((await testSend(other.testToken, otherEndpoint.body.id)).status).toBe(200);

    nextWindow();
    expect((await testSend()).status).toBe(200);
    const replayed = await call(w, 'POST', `/v1/webhook-deliveries/${deliveryId}/replay`, {
      token: company.testToken,
    });
    expect(replayed.status, replayed.text).toBe(200);
  });

  it("the dashboard's test send spends from the same budget: over it, back to the endpoint saying why, nothing sent", async () => {
    nextWindow();
    const company = await createCompany(w, 'Clicking Company');
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: one.url, event_types: ['shipment.created'] },
    });
    const id = endpoint.body.id as string;
    for (let i = 0; i < OUTBOUND_SENDS_PER_ACCOUNT; i++)
      expect(
        (await call(w, 'POST', `/v1/webhook-endpoints/${id}/test`, { token: company.testToken, body: {} }))
          .status,
      ).toBe(200);
    const browser = new PageClient(w);
    browser.cookies.set('waybill_session', company.owner.token);
    const page = await browser.request('GET', `/dashboard/webhooks/${id}`);
    expect(page.status).toBe(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1] as string;
    const sentBefore = one.received;
    const refused = await browser.request('POST', `/dashboard/webhooks/${id}/test`, { _csrf: csrf });
    expect(refused.status).toBe(303);
    expect(refused.location).toBe(`/dashboard/webhooks/${id}`);
    const back = await browser.request('GET', refused.location ?? '');
    expect(back.text).toContain('No test message was sent');
    expect(back.text).toContain('too many requests');
    expect(back.text).toMatch(/try again in \d+ s/);
    expect(one.received).toBe(sentBefore);
  });
});
