import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp } from '../apps/fixtures.ts';
import { type CompanyFixture, call, createCompany, type Person, signUpPerson } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Receiver, startReceiver } from '../webhooks/api/support.ts';
import { PASSWORD } from './page-client.ts';

/**
 * Issue 53 item 7: the charts (an endpoint's health, the developer console's installs) are read
 * on a 390 px phone: their axis labels and legend are text of at least 12 px as Chromium computes
 * it, the bars stretch to the width there is, nothing scrolls sideways, and the table twin is
 * still there for screen readers. Screenshots at 1280 and 390 px in /tmp/shots.
 */
describe.skipIf(!hasChromium)('charts read at 390 px in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let developer: Person;
  let receiver: Receiver;
  let endpointPath: string;
  let consolePath: string;

  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    receiver = await startReceiver();
    company = await createCompany(w, 'Chart Freight');
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    // A bar to draw: one test message, answered.
    const sent = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.body.id}/test`, {
      token: company.testToken,
      body: {},
    });
    expect(sent.status, sent.text).toBe(200);
    endpointPath = `/dashboard/webhooks/${endpoint.body.id}`;
    developer = await signUpPerson(w, 'Chart Developer');
    const app = await registerApp(w, developer, { name: 'Chart Loop' });
    consolePath = `/developer/apps/${app.id}`;
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  /** Every chart's labels and legend: their computed font sizes in px, and the charts' widths. */
  const measure = (page: Page) =>
    page.evaluate(`(() => {
      const sizes = [...document.querySelectorAll('.chart-figure .chart-tick, .chart-figure figcaption *')]
        .filter((e) => e.textContent.trim())
        .map((e) => ({ text: e.textContent, px: Number.parseFloat(getComputedStyle(e).fontSize) }));
      const charts = [...document.querySelectorAll('svg.chart')].map((svg) => svg.getBoundingClientRect().width);
      const twins = document.querySelectorAll('.chart-figure table.sr-only tbody tr').length;
      const scrolls = document.documentElement.scrollWidth > document.documentElement.clientWidth;
      return { sizes, charts, twins, scrolls };
    })()`) as Promise<{
      sizes: Array<{ text: string; px: number }>;
      charts: number[];
      twins: number;
      scrolls: boolean;
    }>;

  for (const [name, who] of [
    ['endpoint', () => company.owner.email],
    ['console', () => developer.email],
  ] as const) {
    it(`${name} page: labels and legend at least 12 px at 390, the bars as wide as there is room`, async () => {
      const path = name === 'endpoint' ? endpointPath : consolePath;
      for (const width of [1280, 390]) {
        const context = await browser.newContext({ viewport: { width, height: 900 } });
        const page = await context.newPage();
        await page.goto(`${w.url}/signin?return_to=${encodeURIComponent(path)}`);
        await page.getByLabel('E-mail').fill(who());
        await page.getByLabel('Password').fill(PASSWORD);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(`${w.url}${path}`);
        await page.waitForLoadState('load');
        await page.screenshot({ path: `/tmp/shots/chart-${name}-${width}.png`, fullPage: true });
        await page
          .locator('.chart-figure')
          .first()
          .screenshot({ path: `/tmp/shots/chart-${name}-${width}-figure.png` });
        const found = await measure(page);
        await context.close();
        expect(found.charts.length).toBeGreaterThan(0);
        expect(found.twins).toBeGreaterThan(0);
        // The y axis's numbers and the x axis's dates are both there as text.
        expect(found.sizes.map((s) => s.text)).toContain('0');
        expect(found.sizes.some((s) => /^\d{2}-\d{2}/.test(s.text))).toBe(true);
        for (const size of found.sizes) expect(size.px, size.text).toBeGreaterThanOrEqual(12);
        if (width === 390) {
          expect(found.scrolls).toBe(false);
          // Stretched to the card, not drawn at the SVG's own width and scaled down.
          for (const chart of found.charts) expect(chart).toBeGreaterThan(250);
        }
      }
    });
  }
});
