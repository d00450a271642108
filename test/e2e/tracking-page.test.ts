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
      destination: { line1: 'Calle del Secreto 13', city: 'Valencia', postal_code: '46001', country: 'ES' },
      estimated_delivery: {
        earliest: '2026-11-22T08:00:00Z',
        latest: '2026-11-22T18:00:00Z',
        source: 'carrier',
      },
    });
    // Two checkpoints from the carrier, then a move by hand: three lines beside the creation.
    const checkpoints = [
      {
        occurred_at: '2026-11-21T13:00:00Z',
        location: { city: 'Zaragoza', country: 'ES', postal_code: '50197', lat: 41.65, lng: -0.87 },
        message: 'Left the Zaragoza hub',
        status: 'in_transit',
        sub_status: 'in_transit.departed_facility',
      },
      {
        occurred_at: '2026-11-21T14:00:00Z',
        location: { city: 'Madrid', country: 'ES' },
        message: 'Arrived at the Madrid depot',
        sub_status: 'in_transit.arrived_facility',
      },
    ];
    for (const body of checkpoints) {
      w.clock.advance(3_600_000);
      const added = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
        token: company.liveToken,
        body,
      });
      if (added.status !== 201) throw new Error(added.text);
    }
    w.clock.advance(3_600_000);
    const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: company.liveToken,
      body: { status: 'out_for_delivery' },
    });
    if (moved.status !== 200) throw new Error(moved.text);
    await call(w, 'PATCH', `/v1/shipments/${shipment.id}`, {
      token: company.liveToken,
      body: { sub_status: 'out_for_delivery.on_vehicle' },
    });
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
        await expect
          .poll(() => page.locator('.sub-status').textContent())
          .toBe(
            spanish ? 'El paquete está en el vehículo de reparto' : 'The parcel is on the delivery vehicle',
          );
        const timeline = (await page.locator('ol.timeline').textContent()) ?? '';
        expect(timeline).toContain(spanish ? 'Madrid, España' : 'Madrid, Spain');
        expect(timeline).toContain('Left the Zaragoza hub');
        expect(await page.getByText(spanish ? 'Llegada prevista' : 'Expected').count()).toBe(1);
        expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
        const text = (await page.locator('body').textContent()) ?? '';
        expect(text).not.toContain('Grace');
        expect(text).not.toContain('example.test');
        const html = await page.content();
        for (const hidden of ['Calle del Secreto', 'Valencia', '46001', '50197', '41.65', 'chk_', 'shp_'])
          expect(html).not.toContain(hidden);
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
