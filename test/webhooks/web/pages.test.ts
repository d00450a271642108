import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { PageClient } from '../../web/page-client.ts';
import { type Receiver, startReceiver, verify } from '../api/support.ts';

/** A person's browser (the shared page client) that submits the form of a given page. */
class Browser extends PageClient {
  /** Submits a form the way a person would: the CSRF token from that page, plus the fields. */
  submit(page: string, action: string, fields: Record<string, string | string[]> = {}) {
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
    if (!csrf) throw new Error('no CSRF field on the page');
    return this.request('POST', action, { _csrf: csrf, ...fields });
  }
}

describe('webhook dashboard pages', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;
  let browser: Browser;

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    company = await createCompany(w);
    browser = new Browser(w);
    // Signed in as the owner: the session cookie holds the person's session token.
    browser.cookies.set('waybill_session', company.owner.token);
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  it('creates an endpoint from the dashboard, reveals its secret, sends a test and shows the answer', async () => {
    const list = await browser.request('GET', '/dashboard/webhooks');
    expect(list.status).toBe(200);
    expect(list.text).toContain('No test endpoints yet');
    const form = await browser.request('GET', '/dashboard/webhooks/new');
    // The company is not live yet: the form defaults to test shipments.
    expect(form.text).toMatch(/value="test" checked/);

    const refused = await browser.submit(form.text, '/dashboard/webhooks', {
      url: 'https://169.254.169.254/latest',
      event_types: ['shipment.created'],
      mode: 'live',
    });
    // Refused: 303 back to the form as typed, the reason beside the URL.
    expect(refused.status).toBe(303);
    expect(refused.location).toBe('/dashboard/webhooks/new');
    const again = await browser.follow(refused);
    expect(again.text).toContain('not allowed');
    expect(again.text).toContain('value="https://169.254.169.254/latest"');

    const created = await browser.submit(form.text, '/dashboard/webhooks', {
      url: receiver.url,
      description: 'Orders <script>alert(1)</script>',
      event_types: ['shipment.created', 'shipment.delivered'],
      mode: 'live',
    });
    // Post, redirect, get: the secret travels in a one-time flash kept server-side, never the URL.
    expect(created.status).toBe(303);
    expect(created.location).toMatch(/^\/dashboard\/webhooks\/\w+$/);
    const landed = await browser.request('GET', created.location ?? '');
    expect(landed.text).toContain('Orders &lt;script&gt;');
    expect(landed.text).not.toContain('<script>');
    const shownSecret = /id="secret-0" value="(whsec_[^"]+)"/.exec(landed.text)?.[1];
    expect(shownSecret).toBeDefined();
    expect((await browser.request('GET', created.location ?? '')).text).not.toContain(shownSecret);

    const endpoints = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    expect(endpoints.body.data).toHaveLength(1);
    const endpoint = endpoints.body.data[0];
    expect(endpoint).toMatchObject({
      livemode: true,
      event_types: ['shipment.created', 'shipment.delivered'],
    });
    const secret = (
      await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/secret`, { token: company.liveToken })
    ).body.secret;
    expect(shownSecret).toBe(secret);

    const page = await browser.request('GET', `/dashboard/webhooks/${endpoint.id}`);
    expect(page.status).toBe(200);
    expect(page.text).not.toContain(secret);
    const revealed = await browser.follow(
      await browser.submit(page.text, `/dashboard/webhooks/${endpoint.id}/secret`),
    );
    expect(revealed.status).toBe(200);
    expect(revealed.text).toContain(secret);

    receiver.answer = { status: 200, body: 'received, thanks' };
    const testPosted = await browser.submit(page.text, `/dashboard/webhooks/${endpoint.id}/test`);
    expect(testPosted.status).toBe(303);
    const tested = await browser.follow(testPosted);
    expect(tested.status).toBe(200);
    expect(tested.text).toContain('HTTP 200');
    expect(tested.text).toContain('received, thanks');
    const testedUrl = testPosted.location ?? '';
    expect(receiver.received).toHaveLength(1);
    const message = receiver.received[0] as (typeof receiver.received)[number];
    expect(verify(secret, message, w.clock.now())).toMatchObject({ test: true, type: 'shipment.created' });

    const deliveryId = /\/dashboard\/webhooks\/deliveries\/(dlv_\w+)/.exec(testedUrl)?.[1];
    const delivery = await browser.request('GET', `/dashboard/webhooks/deliveries/${deliveryId}`);
    expect(delivery.status).toBe(200);
    expect(delivery.text).toContain(String(message.headers['webhook-id']));
    expect(delivery.text).toContain('webhook-signature: v1,');
    expect(delivery.text).toContain('received, thanks');
  });

  it('disables, then enables and replays what was cancelled in one action', async () => {
    const endpoints = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    const id = endpoints.body.data[0].id;
    await createShipment(w, company.liveToken);
    const page = await browser.request('GET', `/dashboard/webhooks/${id}`);
    const disabled = await browser.submit(page.text, `/dashboard/webhooks/${id}/disable`);
    expect(disabled.status).toBe(303);
    const after = await browser.request('GET', disabled.location ?? '');
    expect(after.text).toContain('Disabled by hand');
    expect(after.text).toContain('Enable and replay what failed');

    const cancelled = await browser.request('GET', `/dashboard/webhooks/${id}?status=cancelled`);
    expect(cancelled.text).toContain('shipment.created');
    const enabled = await browser.submit(after.text, `/dashboard/webhooks/${id}/enable-and-replay`);
    expect(enabled.status).toBe(303);
    const back = await browser.request('GET', enabled.location ?? '');
    expect(back.text).toContain('1 deliveries queued again');
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    expect(read.body).toMatchObject({ enabled: true, disabled_reason: null });
    const pending = await call(w, 'GET', `/v1/webhook-endpoints/${id}/deliveries?status=pending`, {
      token: company.liveToken,
    });
    expect(pending.body.data).toHaveLength(1);
  });

  it('deletes an endpoint from its page and says so on the list', async () => {
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.exception'], description: 'To delete' },
    });
    const page = await browser.request('GET', `/dashboard/webhooks/${endpoint.body.id}`);
    // The first click is a link to a page that asks once more, naming what goes; nothing changes.
    expect(page.text).toContain(`href="/dashboard/webhooks/${endpoint.body.id}/delete"`);
    const question = await browser.request('GET', `/dashboard/webhooks/${endpoint.body.id}/delete`);
    expect(question.text).toContain('Delete the endpoint To delete?');
    expect(question.text).toContain('Its delivery history');
    const still = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.body.id}`, {
      token: company.liveToken,
    });
    expect(still.status).toBe(200);
    // A POST that skipped the question is sent to it.
    const skipped = await browser.submit(page.text, `/dashboard/webhooks/${endpoint.body.id}/delete`);
    expect(skipped.location).toBe(`/dashboard/webhooks/${endpoint.body.id}/delete`);
    const kept = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.body.id}`, {
      token: company.liveToken,
    });
    expect(kept.status).toBe(200);
    const deleted = await browser.submit(question.text, `/dashboard/webhooks/${endpoint.body.id}/delete`, {
      confirmed: 'yes',
    });
    expect(deleted.location).toBe('/dashboard/webhooks');
    const gone = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.body.id}`, {
      token: company.liveToken,
    });
    expect(gone.status).toBe(404);
    const list = await browser.request('GET', deleted.location ?? '');
    expect(list.text).toContain('Endpoint deleted');
    expect(list.text).not.toContain('To delete');
    const spoofed = await browser.request('GET', '/dashboard/webhooks?done=Your+account+is+locked');
    expect(spoofed.text).not.toContain('Your account is locked');
  });

  it('shows and sets the delivery controls on the endpoint page, credentials masked and a pause with its end', async () => {
    const created = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'], description: 'Controlled' },
    });
    const id = created.body.id;
    const page = await browser.request('GET', `/dashboard/webhooks/${id}`);
    expect(page.text).toContain('Delivery controls');
    const saved = await browser.submit(page.text, `/dashboard/webhooks/${id}/controls`, {
      rate_limit: '25',
      ordering: 'per_shipment',
      header_name: ['Authorization', 'X-Route', ''],
      header_value: ['Bearer receiver-credential-7781', 'eu-west', ''],
    });
    expect(saved.status).toBe(303);
    const after = await browser.request('GET', saved.location ?? '');
    expect(after.text).toContain('Delivery controls saved');
    expect(after.text).toContain('value="25"');
    expect(after.text).toMatch(/value="per_shipment" selected/);
    expect(after.text).toContain('value="eu-west"');
    expect(after.text).not.toContain('receiver-credential-7781');
    expect(after.text).toContain('••••••••7781');
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    expect(read.body).toMatchObject({
      rate_limit: 25,
      ordering: 'per_shipment',
      headers: { Authorization: '••••••••7781', 'X-Route': 'eu-west' },
    });

    // Saving the page again as shown keeps the credential; a reserved name is refused, nothing changes.
    const again = await browser.submit(after.text, `/dashboard/webhooks/${id}/controls`, {
      rate_limit: '',
      ordering: 'per_shipment',
      header_name: ['Authorization', 'X-Route', 'webhook-id'],
      header_value: ['••••••••7781', 'eu-west', 'forged'],
    });
    // Back to the form (303), as typed, the error beside the headers in words, not the API's path.
    expect(again.status).toBe(303);
    expect(again.location).toBe(`/dashboard/webhooks/${id}`);
    const refused = await browser.request('GET', again.location ?? '');
    expect(refused.text).toContain('The header webhook-id is set by Waybill or by HTTP itself');
    expect(refused.text).not.toContain('headers/webhook-id');
    expect(refused.text).toContain('value="forged"');
    const saved2 = await browser.submit(after.text, `/dashboard/webhooks/${id}/controls`, {
      rate_limit: '',
      ordering: 'none',
      header_name: ['Authorization', 'X-Route'],
      header_value: ['••••••••7781', ''],
    });
    expect(saved2.status).toBe(303);
    const row = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select(['headers_sealed', 'rate_limit', 'ordering'])
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ rate_limit: null, ordering: 'none' });
    expect(JSON.parse(w.ctx.secrets.open(row.headers_sealed as string))).toEqual({
      Authorization: 'Bearer receiver-credential-7781',
      'X-Route': '',
    });

    const until = new Date(w.clock.now().getTime() + 15 * 60_000);
    await w.ctx.db
      .updateTable('webhook_endpoints')
      .set({ paused_until: until })
      .where('id', '=', id)
      .execute();
    const paused = await browser.request('GET', `/dashboard/webhooks/${id}`);
    expect(paused.text).toContain(`Paused until ${until.toISOString()}`);
  });

  it('refuses a form without its CSRF token and changes nothing', async () => {
    const endpoints = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    const id = endpoints.body.data[0].id;
    const forged = await browser.request('POST', `/dashboard/webhooks/${id}/disable`, {});
    expect(forged.status).toBe(403);
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    expect(read.body.enabled).toBe(true);
  });

  it('serves the receiver guide at /docs/webhooks beside the API reference, without signing in', async () => {
    const guide = await fetch(`${w.url}/docs/webhooks`);
    expect(guide.status).toBe(200);
    expect(guide.headers.get('content-type')).toContain('text/html');
    const text = await guide.text();
    for (const needle of [
      'standardwebhooks',
      'timingSafeEqual',
      'webhook-id',
      'previous_status',
      '410',
      'Waybill-Webhooks/1.0',
      // The event catalogue, and how to generate a receiver's types from it.
      '/v1/webhook-event-types',
      'href="/openapi.json"',
      `npx openapi-typescript ${w.url}/openapi.json -o waybill.ts`,
      'type WaybillEvent = Body&lt;keyof webhooks&gt;;',
    ]) {
      expect(text).toContain(needle);
    }
    expect((await fetch(`${w.url}/docs`)).status).toBeLessThan(400);
    const openapi = (await (await fetch(`${w.url}/openapi.json`)).json()) as { paths: object };
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining([
        '/v1/webhook-endpoints',
        '/v1/webhook-endpoints/{id}/deliveries/replay',
        '/v1/webhook-deliveries/{id}/replay',
        '/v1/webhook-event-types',
      ]),
    );
  });

  it('says why an attempt failed in words beside its code: a refused connection, a server error', async () => {
    // A port nothing listens on: the connection is refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: `http://127.0.0.1:${port}/hook`, event_types: ['shipment.created'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const id = endpoint.body.id as string;
    const page = await browser.request('GET', `/dashboard/webhooks/${id}`);
    const sent = await browser.follow(await browser.submit(page.text, `/dashboard/webhooks/${id}/test`));
    expect(sent.text).toContain(
      'connection_failed (the connection was refused or dropped: nothing accepted it at that address and port)',
    );
    const deliveryId = /\/dashboard\/webhooks\/deliveries\/(dlv_\w+)/.exec(sent.text)?.[1];
    const delivery = await browser.request('GET', `/dashboard/webhooks/deliveries/${deliveryId}`);
    expect(delivery.text).toContain('connection_failed (the connection was refused or dropped');

    const kept = receiver.answer;
    receiver.answer = { status: 503, body: 'down' };
    const answering = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    const other = answering.body.id as string;
    const otherPage = await browser.request('GET', `/dashboard/webhooks/${other}`);
    const failed = await browser.follow(
      await browser.submit(otherPage.text, `/dashboard/webhooks/${other}/test`),
    );
    receiver.answer = kept;
    expect(failed.text).toContain('HTTP 503 (the receiver&#39;s server failed)');
  });
});
