import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

// The browser test needs Debian's chromium (.ci/run installs it); without it there is nothing to drive.
describe.skipIf(!hasChromium)('dashboard in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  async function hasNoHorizontalOverflow(page: Page): Promise<boolean> {
    // A string, evaluated in the page: the test's own TypeScript has no DOM types.
    return (await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')) === true;
  }

  it('signs up, creates a company and a shipment, moves it to delivered, and sees its events', async () => {
    const context = await browser.newContext({ viewport: { width: 375, height: 740 }, isMobile: true });
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy/i.test(message.text())) blocked.push(message.text());
    });

    await page.goto(`${w.url}/dashboard`);
    expect(new URL(page.url()).pathname).toBe('/signin');
    await page.getByRole('link', { name: 'Create an account' }).click();
    await page.getByLabel('Name').fill('Browser Person');
    await page.getByLabel('E-mail').fill('browser@example.test');
    await page.getByLabel(/^Password/).fill('correct horse battery');
    await page.getByRole('button', { name: 'Sign up' }).click();

    await page.waitForURL('**/dashboard/companies/new');
    await page.getByLabel('Company name').fill('Browser Freight');
    await page.getByRole('button', { name: 'Create company' }).click();
    await page.waitForURL('**/dashboard/shipments');
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Browser Freight is ready.');

    await page.getByRole('link', { name: 'New shipment' }).click();
    await page.getByLabel('Recipient name').fill('Ada Lovelace');
    await page.getByLabel('Cash on delivery', { exact: true }).check();
    await page.getByLabel(/^Amount to collect/).fill('19.99');
    await page.getByRole('button', { name: 'Create shipment' }).click();
    await page.waitForURL(/\/dashboard\/shipments\/shp_\w+$/);
    await expect.poll(() => page.locator('main').textContent()).toContain('€19.99 on delivery');

    for (const status of ['picked up', 'in transit', 'out for delivery', 'delivered']) {
      await page.getByLabel('Move to').selectOption({ label: status });
      await page.getByRole('button', { name: 'Change status' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toBe(`Moved to ${status}.`);
    }
    const eventTypes = await page.locator('.event-type').allTextContents();
    expect(eventTypes).toContain('shipment.delivered');
    expect(eventTypes.filter((t) => t === 'shipment.status_changed')).toHaveLength(4);
    expect(eventTypes).toContain('shipment.created');
    expect(await page.locator('main').textContent()).toContain('delivered is final');
    expect(await hasNoHorizontalOverflow(page)).toBe(true);
    await page.screenshot({ path: '/tmp/waybill-shipment-375.png', fullPage: true });

    await page.getByRole('link', { name: 'Events' }).click();
    await page.waitForURL('**/dashboard/events');
    expect(await page.locator('.event-type').allTextContents()).toContain('shipment.delivered');
    await page.locator('details summary').first().click();
    expect(await page.locator('details[open] pre').first().textContent()).toContain('"api_version"');
    expect(await hasNoHorizontalOverflow(page)).toBe(true);
    await page.goto(`${w.url}/dashboard/shipments`);
    expect(await hasNoHorizontalOverflow(page)).toBe(true);
    expect(blocked).toEqual([]);
    await context.close();
  });
});
