import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OUTBOUND_SENDS_PER_ACCOUNT } from '../../src/modules/outbound/budget.ts';
import { type CompanyFixture, call, createCompany } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInChromium } from '../web/page-client.ts';

/**
 * Issue 53 item 6 on an endpoint's page: a refused delivery controls form answers 303 back to the
 * page, the values as typed and the error beside its field in words (no API path); a refused test
 * send or replay answers 303 with a flash saying why, never an error page. Nothing is written or
 * sent, counted through the API; a reload repeats nothing.
 */
describe.skipIf(!hasChromium)('refusals on the webhook endpoint page in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let page: Page;
  let receiver: Server;
  let received = 0;
  let id: string;

  beforeAll(async () => {
    w = await startWaybill();
    receiver = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        received++;
        response.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
    browser = await launchChromium();
    company = await createCompany(w, 'Refused Freight');
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url, event_types: ['shipment.created'], description: 'Orders' },
    });
    id = endpoint.body.id as string;
    ({ page } = await signInChromium(browser, w, company.owner.email, {
      viewport: { width: 390, height: 844 },
    }));
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
    await new Promise((resolve) => receiver?.close(resolve));
  });

  const endpointPath = () => `/dashboard/webhooks/${id}`;
  const stored = async () =>
    (await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.testToken })).body;
  const deliveries = async () =>
    (await call(w, 'GET', `/v1/webhook-endpoints/${id}/deliveries?limit=100`, { token: company.testToken }))
      .body.data as Array<{ id: string; attempt_count: number }>;

  /** Submits past the browser's own checks, so the server's refusal is what is shown. */
  const press = async (action: string, button: string) => {
    await page.locator(`form[action="${action}"]`).evaluate((f) => {
      f.setAttribute('novalidate', '');
    });
    const [answer] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: button }).click(),
    ]);
    expect(answer.status()).toBe(303);
    await page.waitForLoadState('load');
  };
  const expectBeside = async (selector: string, field: string, words: RegExp) => {
    const control = page.locator(selector).first();
    expect(await control.getAttribute('aria-invalid')).toBe('true');
    expect(await control.getAttribute('aria-describedby')).toBe(`error-${field}`);
    const text = (await page.locator(`#error-${field}`).textContent()) ?? '';
    expect(text).toMatch(words);
    // Words a person reads: no API path, no field's API name.
    expect(text).not.toMatch(/\/|rate_limit|headers\//);
  };
  const reloadIsPlain = async () => {
    await page.reload();
    expect(await page.locator('.field-error').count()).toBe(0);
    expect(await page.locator('.flash.error').count()).toBe(0);
    expect(await page.locator('[aria-invalid="true"]').count()).toBe(0);
  };

  it('a rate limit out of range: the error beside it, the values as typed, nothing saved', async () => {
    await page.goto(`${w.url}${endpointPath()}`);
    await page.locator('[name="rate_limit"]').fill('0');
    await page.locator('[name="ordering"]').selectOption('per_shipment');
    await page.getByLabel('Header name 1').fill('X-Route');
    await page.getByLabel('Header value 1').fill('eu-west');
    await press(`${endpointPath()}/controls`, 'Save delivery controls');
    expect(page.url()).toBe(`${w.url}${endpointPath()}`);
    await expectBeside('[name="rate_limit"]', 'rate_limit', /Rate limit.*whole number from 1 to 10000/);
    expect(await page.locator('.flash.error').textContent()).toMatch(/delivery controls were not saved/);
    expect(await page.locator('[name="rate_limit"]').inputValue()).toBe('0');
    expect(await page.locator('[name="ordering"]').inputValue()).toBe('per_shipment');
    expect(await page.getByLabel('Header name 1').inputValue()).toBe('X-Route');
    expect(await page.getByLabel('Header value 1').inputValue()).toBe('eu-west');
    await page.screenshot({ path: '/tmp/shots/endpoint-controls-error-390.png', fullPage: true });
    expect(await stored()).toMatchObject({ rate_limit: null, ordering: 'none', headers: {} });
    await reloadIsPlain();
    expect(await page.locator('[name="rate_limit"]').inputValue()).toBe('');
    expect(await page.getByLabel('Header name 1').inputValue()).toBe('');
    expect(await stored()).toMatchObject({ rate_limit: null, ordering: 'none', headers: {} });
  });

  it('a reserved header name: the error beside the headers, naming the header', async () => {
    await page.locator('[name="rate_limit"]').fill('5');
    await page.getByLabel('Header name 1').fill('webhook-id');
    await page.getByLabel('Header value 1').fill('forged');
    await press(`${endpointPath()}/controls`, 'Save delivery controls');
    await expectBeside('fieldset[name="headers"]', 'headers', /The header webhook-id is set by Waybill/);
    expect(await page.locator('[name="rate_limit"]').inputValue()).toBe('5');
    expect(await page.getByLabel('Header name 1').inputValue()).toBe('webhook-id');
    expect(await stored()).toMatchObject({ rate_limit: null, headers: {} });
    await reloadIsPlain();
  });

  it('a test send over the budget: back to the endpoint saying why, nothing sent', async () => {
    for (let i = 0; i < OUTBOUND_SENDS_PER_ACCOUNT; i++) {
      const sent = await call(w, 'POST', `/v1/webhook-endpoints/${id}/test`, {
        token: company.testToken,
        body: {},
      });
      expect(sent.status).toBe(200);
    }
    const before = (await deliveries()).length;
    const receivedBefore = received;
    await page.goto(`${w.url}${endpointPath()}`);
    await press(`${endpointPath()}/test`, 'Send a test message');
    expect(page.url()).toBe(`${w.url}${endpointPath()}`);
    const flash = (await page.locator('.flash.error').textContent()) ?? '';
    expect(flash).toMatch(/No test message was sent/);
    expect(flash).toMatch(/too many requests.*try again in \d+ s/);
    expect((await deliveries()).length).toBe(before);
    expect(received).toBe(receivedBefore);
    await reloadIsPlain();
    expect((await deliveries()).length).toBe(before);
  });

  it('a replay of a disabled endpoint: back to the delivery saying why, no attempt made', async () => {
    await page.goto(`${w.url}${endpointPath()}`);
    await press(`${endpointPath()}/disable`, 'Disable');
    expect(await stored()).toMatchObject({ enabled: false });
    const [delivery] = await deliveries();
    const deliveryPath = `/dashboard/webhooks/deliveries/${delivery?.id}`;
    await page.goto(`${w.url}${deliveryPath}`);
    await press(`${deliveryPath}/replay`, 'Replay now');
    expect(page.url()).toBe(`${w.url}${deliveryPath}`);
    expect(await page.locator('.flash.error').textContent()).toMatch(
      /Not replayed\. Enable the endpoint before replaying its deliveries/,
    );
    const after = (await deliveries()).find((d) => d.id === delivery?.id);
    expect(after?.attempt_count).toBe(delivery?.attempt_count);
    await reloadIsPlain();
    expect((await deliveries()).find((d) => d.id === delivery?.id)?.attempt_count).toBe(
      delivery?.attempt_count,
    );
  });
});
