import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInChromium } from './page-client.ts';

/**
 * Issue 53 item 5 and issue 51 item 6: every time a dashboard page shows is a <time datetime> in
 * UTC for a reader without script, rewritten by /static/local-time.js (a same-origin file, as the
 * CSP allows) in the viewer's zone, with how long ago beside it counted from the server's clock.
 */
describe.skipIf(!hasChromium)("times in the viewer's zone in Chromium", () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let shipmentId: string;

  const signedIn = (options: { timezoneId: string; javaScriptEnabled?: boolean }) =>
    signInChromium(browser, w, company.owner.email, { locale: 'en-US', ...options });
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    company = await createCompany(w, 'Zone Freight');
    const shipment = await createShipment(w, company.testToken, { external_ref: 'order-9' });
    shipmentId = shipment.id;
    const checkpoint = await call(w, 'POST', `/v1/shipments/${shipmentId}/checkpoints`, {
      token: company.testToken,
      body: { occurred_at: '2026-11-21T10:00:00Z', message: 'Left the depot', status: 'in_transit' },
    });
    expect(checkpoint.status, checkpoint.text).toBe(201);
  });
  afterAll(async () => {
    for (const c of contexts) await c.close();
    await browser?.close();
    await w?.close();
  });

  it('the timeline shows the checkpoint in Tokyo time, "2 hours ago" by the server clock', async () => {
    const { context, page } = await signedIn({ timezoneId: 'Asia/Tokyo' });
    contexts.push(context);
    await page.goto(`${w.url}/dashboard/shipments/${shipmentId}`);
    const item = page.getByRole('list', { name: 'Checkpoints, newest first' }).getByRole('listitem');
    const time = item.locator('time');
    await expect.poll(() => time.textContent()).toMatch(/Nov 21, 2026, 7:00\sPM GMT\+9/);
    expect(await time.getAttribute('datetime')).toBe('2026-11-21T10:00:00.000Z');
    expect(await time.getAttribute('title')).toBe('2026-11-21 10:00 UTC');
    expect(await item.locator('.ago').textContent()).toBe('2 hours ago');
    // Every time on the page went through the script: none is left in its UTC fallback.
    await expect
      .poll(() => page.locator('time.local-time').evaluateAll((els) => els.map((e) => e.textContent)))
      .not.toContainEqual(expect.stringContaining(' UTC'));
    await page.screenshot({ path: '/tmp/shots/local-time-shipment-1280.png', fullPage: true });
  });

  it('the events, tokens and members lists show times in New York time', async () => {
    const { context, page } = await signedIn({ timezoneId: 'America/New_York' });
    contexts.push(context);
    for (const path of ['/dashboard/events', '/dashboard/api-tokens', '/dashboard/members']) {
      await page.goto(`${w.url}${path}`);
      const times = page.locator('time.local-time');
      await expect.poll(() => times.count()).toBeGreaterThan(0);
      await expect
        .poll(() => times.evaluateAll((els) => els.map((e) => e.textContent ?? '')))
        .toEqual(expect.arrayContaining([expect.stringMatching(/EST$/)]));
    }
  });

  it('without script the times read in UTC, with the server\'s "2 h ago"', async () => {
    const { context, page } = await signedIn({ timezoneId: 'Asia/Tokyo', javaScriptEnabled: false });
    contexts.push(context);
    await page.goto(`${w.url}/dashboard/shipments/${shipmentId}`);
    const item = page.getByRole('list', { name: 'Checkpoints, newest first' }).getByRole('listitem');
    expect(await item.locator('time').textContent()).toBe('2026-11-21 10:00 UTC');
    expect(await item.locator('.ago').textContent()).toBe('2 h ago');
  });

  it('the script is a same-origin file with a JavaScript type, allowed by the CSP', async () => {
    const answer = await fetch(`${w.url}/static/local-time.js`);
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/javascript/);
    const page = await fetch(`${w.url}/signin`);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await page.text()).toContain('<script src="/static/local-time.js" defer></script>');
  });
});
