import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInChromium } from './page-client.ts';

/**
 * Issue 53 item 6: a refused form answers 303 back to its page (a reload repeats no POST), the
 * fields as typed (kept by the one-time flash, decision 0083) and each error beside its field
 * (aria-invalid, aria-describedby), in words; nothing is written, checked through the API.
 */
describe.skipIf(!hasChromium)('form errors beside their fields in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let page: Page;

  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    company = await createCompany(w, 'Careful Freight');
    ({ page } = await signInChromium(browser, w, company.owner.email, {
      viewport: { width: 390, height: 844 },
    }));
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  /** Submits past the browser's own checks, so the server's refusal is what is shown. */
  const submit = async (action: string, button: string) => {
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
  const expectBeside = async (field: string, words: RegExp) => {
    const control = page.locator(`[name="${field}"]`).first();
    expect(await control.getAttribute('aria-invalid')).toBe('true');
    expect(await control.getAttribute('aria-describedby')).toBe(`error-${field}`);
    expect(await page.locator(`#error-${field}`).textContent()).toMatch(words);
  };
  const reloadIsPlain = async (field: string) => {
    await page.reload();
    expect(await page.locator(`#error-${field}`).count()).toBe(0);
    expect(await page.locator('.flash.error').count()).toBe(0);
  };

  it('API token: no scope chosen; the name and mode come back as typed', async () => {
    await page.goto(`${w.url}/dashboard/api-tokens`);
    await page.getByLabel('Name').fill('Warehouse sync');
    await page.getByLabel('Live data').check();
    await submit('/dashboard/api-tokens', 'Create token');
    expect(page.url()).toBe(`${w.url}/dashboard/api-tokens`);
    await expectBeside('scopes', /Choose at least one scope/);
    expect(await page.getByLabel('Name').inputValue()).toBe('Warehouse sync');
    expect(await page.getByLabel('Live data').isChecked()).toBe(true);
    await page.screenshot({ path: '/tmp/shots/form-error-token-390.png', fullPage: true });
    const tokens = await call(w, 'GET', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
    });
    expect(JSON.stringify(tokens.body)).not.toContain('Warehouse sync');
    await reloadIsPlain('scopes');
    expect(await page.getByLabel('Name').inputValue()).toBe('');
  });

  it('branding: a support link that is not http(s); the display name comes back as typed', async () => {
    await page.goto(`${w.url}/dashboard/settings/branding`);
    await page.getByLabel('Display name').fill('Careful Parcels');
    await page.getByLabel('Support link').fill('ftp://help.example');
    await submit('/dashboard/settings/branding', 'Save branding');
    await expectBeside('support_url', /support link starts with https/i);
    expect(await page.getByLabel('Display name').inputValue()).toBe('Careful Parcels');
    expect(await page.getByLabel('Support link').inputValue()).toBe('ftp://help.example');
    const company_ = await call(w, 'GET', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
    });
    expect(JSON.stringify(company_.body)).not.toContain('Careful Parcels');
    await reloadIsPlain('support_url');
  });

  it('webhook endpoint: no event chosen; the URL and description come back as typed', async () => {
    await page.goto(`${w.url}/dashboard/webhooks/new`);
    await page.getByLabel('URL').fill('https://example.com/hooks');
    await page.getByLabel('Description').fill('Orders');
    await submit('/dashboard/webhooks', 'Add endpoint');
    expect(page.url()).toBe(`${w.url}/dashboard/webhooks/new`);
    expect(await page.locator('[aria-invalid="true"]').count()).toBeGreaterThan(0);
    expect(await page.locator('.field-error').count()).toBeGreaterThan(0);
    expect(await page.getByLabel('URL').inputValue()).toBe('https://example.com/hooks');
    expect(await page.getByLabel('Description').inputValue()).toBe('Orders');
    await page.screenshot({ path: '/tmp/shots/form-error-endpoint-390.png', fullPage: true });
    const endpoints = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.testToken });
    expect(endpoints.body.data).toEqual([]);
  });

  it('inbound source: a carrier code with capitals and spaces; the name comes back as typed', async () => {
    await page.goto(`${w.url}/dashboard/inbound`);
    await page.getByLabel('Name').fill('City Courier');
    await page.getByLabel('Carrier code').fill('City Courier');
    await submit('/dashboard/inbound', 'Add source');
    expect(page.url()).toBe(`${w.url}/dashboard/inbound`);
    await expectBeside('carrier_code', /Carrier code/);
    expect(await page.getByLabel('Name').inputValue()).toBe('City Courier');
    const sources = await call(w, 'GET', '/v1/inbound-sources', { token: company.testToken });
    expect(sources.body.data).toEqual([]);
    await reloadIsPlain('carrier_code');
  });
});
