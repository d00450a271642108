import { mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/** Where the screenshots go (the closing note shows them); outside the repository. */
const SHOTS = process.env.WAYBILL_SCREENSHOTS ?? '/tmp/waybill-tracking-shots';

describe.skipIf(!hasChromium)('the tracking page in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let url: string;
  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    mkdirSync(SHOTS, { recursive: true });
    const company = await createCompany(w, 'Parcel Fox Ltd');
    const branded = await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: {
        branding: {
          display_name: 'Parcel Fox',
          accent_color: '#0b6e4f',
          support_url: 'https://help.example.test/',
        },
      },
    });
    if (branded.status !== 200 && branded.status !== 404) throw new Error(branded.text);
    const shipment = await createShipment(w, company.liveToken, {
      recipient_name: 'Grace Hopper',
      recipient_email: 'grace@example.test',
    });
    for (const status of ['picked_up', 'in_transit', 'out_for_delivery']) {
      w.clock.advance(3_600_000);
      await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
        token: company.liveToken,
        body: { status },
      });
    }
    url = shipment.tracking_url;
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  for (const width of [1280, 390]) {
    for (const locale of ['en-GB', 'es-ES']) {
      it(`fits ${width} px in ${locale}, with no script, no blocked style and nothing personal`, async () => {
        const context = await browser.newContext({
          viewport: { width, height: 800 },
          locale,
          isMobile: width < 500,
          extraHTTPHeaders: { 'accept-language': locale },
        });
        const page = await context.newPage();
        const blocked: string[] = [];
        page.on('console', (message) => {
          if (/Content.Security.Policy/i.test(message.text())) blocked.push(message.text());
        });
        const answer = await page.goto(url);
        expect(answer?.status()).toBe(200);
        const spanish = locale.startsWith('es');
        await expect
          .poll(() => page.getByRole('heading', { level: 1 }).textContent())
          .toBe(spanish ? 'Sigue tu paquete' : 'Track your parcel');
        expect(await page.getByRole('status').textContent()).toBe(
          spanish ? 'En reparto' : 'Out for delivery',
        );
        expect(await page.locator('ol.timeline li').count()).toBe(4);
        expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
        const text = (await page.locator('body').textContent()) ?? '';
        expect(text).not.toContain('Grace');
        expect(text).not.toContain('example.test');
        expect(blocked).toEqual([]);
        await page.screenshot({ path: `${SHOTS}/tracking-${width}-${locale}.png`, fullPage: true });
        await context.close();
      });
    }
  }

  it('shows a plain page for a made-up token', async () => {
    const page = await browser.newPage();
    const answer = await page.goto(`${w.url}/t/NoSuchTokenNoSuchToken00`);
    expect(answer?.status()).toBe(404);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
    await page.close();
  });
});
