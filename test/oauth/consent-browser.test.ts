import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  authorizationRequest,
  discover,
  exchangeCode,
  PASSWORD,
  registerApp,
  type TestApp,
} from './support.ts';

describe.skipIf(!hasChromium)('the consent page in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let receiver: Server;
  let company: CompanyFixture;
  let app: TestApp;
  const received: URL[] = [];
  beforeAll(async () => {
    w = await startWaybill();
    let port = 0;
    // The app's redirect receiver: a real local server that records what the browser brings back.
    receiver = createServer((request, response) => {
      const url = new URL(request.url ?? '/', `http://127.0.0.1:${port}`);
      // Chromium also asks for /favicon.ico; only the callback counts.
      if (url.pathname === '/callback') received.push(url);
      response.end('received');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
    company = await createCompany(w);
    await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
      token: company.owner.token,
      body: { name: 'Corner Shop' },
    });
    app = await registerApp(w, { redirectUris: [`http://127.0.0.1:${port}/callback`] });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await w?.close();
  });

  async function signInAndOpen(query: URLSearchParams) {
    const page = await browser.newPage();
    await page.goto(`${w.url}/oauth/authorize?${query}`);
    await page.getByLabel('E-mail').fill(company.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Connect Parcel Pal' }).waitFor();
    return page;
  }

  it('signs in, picks a merchant account, approves, and lands on the app with code, state and iss', async () => {
    const request = await authorizationRequest(app);
    const page = await signInAndOpen(request.query);
    await page.getByLabel(/Corner Shop/).check();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(/\/callback\?/);
    const landed = new URL(page.url());
    expect(landed.searchParams.get('code')).toMatch(/^atc_/);
    expect(landed.searchParams.get('state')).toBe(request.state);
    expect(landed.searchParams.get('iss')).toBe(w.url);
    expect(received.at(-1)?.searchParams.get('code')).toBe(landed.searchParams.get('code'));
    const installation = await w.ctx.db
      .selectFrom('installations')
      .select('customer_account_id')
      .where('app_id', '=', app.clientId)
      .executeTakeFirstOrThrow();
    expect(installation.customer_account_id).toMatch(/^acct_/);
    await page.close();
  });

  it('the person unticks a scope and approves: the token carries only the rest; each choice sits beside its label', async () => {
    const request = await authorizationRequest(app);
    const page = await signInAndOpen(request.query);
    // Every radio button and checkbox on the same line as its label, to the label's left.
    const inputs = page.locator('label.choice > input');
    expect(await inputs.count()).toBe(4); // two scopes, the company and its merchant account
    for (let i = 0; i < (await inputs.count()); i++) {
      const input = await inputs.nth(i).boundingBox();
      const text = await inputs.nth(i).locator('xpath=following-sibling::span[1]').boundingBox();
      if (!input || !text) throw new Error('a choice is not shown');
      expect(input.x + input.width).toBeLessThanOrEqual(text.x);
      expect(input.y).toBeLessThan(text.y + text.height);
      expect(input.y + input.height).toBeGreaterThan(text.y);
    }
    // For a person to look at: the page as the browser drew it.
    await page.screenshot({ path: join(tmpdir(), 'waybill-consent-page.png'), fullPage: true });
    const write = page.getByLabel(/Create shipments and change their status/);
    expect(await write.isChecked()).toBe(true);
    await write.uncheck();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.waitForURL(/\/callback\?/);
    const tokens = await exchangeCode(await discover(w), app, new URL(page.url()), request);
    expect(tokens.scope).toBe('shipments:read');
    const write403 = await call(w, 'POST', '/v1/shipments', { token: tokens.access_token, body: {} });
    expect(write403.status).toBe(403);
    await page.close();
  });

  it('denies, and lands on the app with access_denied', async () => {
    const request = await authorizationRequest(app);
    const page = await signInAndOpen(request.query);
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL(/\/callback\?/);
    const landed = new URL(page.url());
    expect(landed.searchParams.get('error')).toBe('access_denied');
    expect(landed.searchParams.get('state')).toBe(request.state);
    expect(landed.searchParams.get('code')).toBeNull();
    await page.close();
  });
});
