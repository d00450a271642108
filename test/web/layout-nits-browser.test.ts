import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Receiver, startReceiver } from '../webhooks/api/support.ts';
import { signInChromium } from './page-client.ts';

/**
 * Issue 53's layout nits, measured in Chromium: an endpoint's action buttons size to their words
 * at 1280 px (not stretched to the row or the card), and a tracking number stays on one line in
 * the shipments list and on a shipment's page, with no sideways scroll of the page.
 */
describe.skipIf(!hasChromium)('layout: action buttons and tracking numbers in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let receiver: Receiver;
  let endpointPath: string;
  let shipmentPath: string;

  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    receiver = await startReceiver();
    company = await createCompany(w, 'Layout Freight');
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    endpointPath = `/dashboard/webhooks/${endpoint.body.id}`;
    for (const ref of ['ORDER-2001', 'ORDER-2002', 'ORDER-2003']) {
      const shipment = await createShipment(w, company.testToken, {
        external_ref: ref,
        recipient_name: 'Maximiliane Oberhauser-Winterberg',
      });
      shipmentPath = `/dashboard/shipments/${shipment.id}`;
    }
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  const open = async (path: string, width: number): Promise<Page> => {
    const { page } = await signInChromium(browser, w, company.owner.email, {
      viewport: { width, height: 900 },
    });
    await page.goto(`${w.url}${path}`);
    await page.waitForLoadState('load');
    return page;
  };
  const scrollsSideways = (page: Page) =>
    page.evaluate('document.documentElement.scrollWidth > document.documentElement.clientWidth');

  it('1280 px: the endpoint page buttons are as wide as their words and padding', async () => {
    const page = await open(endpointPath, 1280);
    await page.screenshot({ path: '/tmp/shots/layout-endpoint-1280.png', fullPage: true });
    const buttons = (await page.evaluate(`[...document.querySelectorAll('main button, main a.button')]
      .filter((b) => b.offsetParent !== null)
      .map((b) => {
        const range = document.createRange();
        range.selectNodeContents(b);
        const style = getComputedStyle(b);
        const chrome = ['paddingLeft', 'paddingRight', 'borderLeftWidth', 'borderRightWidth']
          .reduce((sum, p) => sum + Number.parseFloat(style[p]), 0);
        return { text: b.textContent.trim(), width: b.getBoundingClientRect().width, words: range.getBoundingClientRect().width + chrome };
      })`)) as Array<{ text: string; width: number; words: number }>;
    const names = buttons.map((b) => b.text);
    for (const name of ['Disable', 'Send a test message', 'Save delivery controls', 'Rotate secret'])
      expect(names).toContain(name);
    for (const b of buttons) expect(b.width, b.text).toBeLessThanOrEqual(b.words + 2);
    // The row's second action stands beside the first, not half a card away.
    const disable = await page.getByRole('button', { name: 'Disable' }).boundingBox();
    const test = await page.getByRole('button', { name: 'Send a test message' }).boundingBox();
    expect((test?.x ?? 0) - ((disable?.x ?? 0) + (disable?.width ?? 0))).toBeLessThan(40);
    await page.context().close();
  });

  for (const width of [1280, 800, 390]) {
    it(`${width} px: a tracking number on one line, in the list and on its page; no sideways scroll`, async () => {
      for (const path of ['/dashboard/shipments', shipmentPath]) {
        const page = await open(path, width);
        await page.screenshot({
          path: `/tmp/shots/layout-${path === shipmentPath ? 'shipment' : 'shipments'}-${width}.png`,
          fullPage: true,
        });
        // An inline element has one client rect per line it takes.
        const lines = (await page.evaluate(`[...document.querySelectorAll('code.tracking-number')]
          .filter((c) => c.offsetParent !== null)
          .map((c) => ({ text: c.textContent, lines: c.getClientRects().length }))`)) as Array<{
          text: string;
          lines: number;
        }>;
        // The list shows the column from 760 px up; a phone reads it on the shipment's page.
        if (width > 760 || path === shipmentPath) expect(lines.length).toBeGreaterThan(0);
        for (const l of lines) {
          expect(l.text).toMatch(/^WB\w{14}$/);
          expect(l.lines, `${path} ${l.text}`).toBe(1);
        }
        expect(await scrollsSideways(page)).toBe(false);
        await page.context().close();
      }
    });
  }
});
