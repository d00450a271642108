import type { Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PASSWORD } from '../web/page-client.ts';

if (!hasChromium) console.warn('inbound pages: skipped: no Chromium at /usr/bin/chromium');

/** The dashboard's inbound sources and their log (issue 51 item 6), in Chromium: a new company's dashboard shows test data, so the source is a test one. */
describe.skipIf(!hasChromium)('inbound sources on the dashboard', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let browser: Browser;

  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  it('adds a source, shows its secret once, and its log shows what the carrier sent', async () => {
    const page = await browser.newPage();
    await page.goto(`${w.url}/signin?return_to=${encodeURIComponent('/dashboard/inbound')}`);
    await page.getByLabel('E-mail').fill(company.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Inbound sources' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('No test inbound sources yet');

    await page.getByLabel('Name').fill('City Courier');
    await page.getByLabel('Carrier code').fill('city-courier');
    await page.getByRole('button', { name: 'Add source' }).click();
    await page.getByText('Source added').waitFor();
    // 303 to the source's page, the secret in the one-time flash (a reload shows it no more).
    expect(page.url()).toMatch(/\/dashboard\/inbound\/ins_/);
    const secret = await page.getByRole('textbox', { name: 'Signing secret' }).inputValue();
    expect(secret).toMatch(/^whsec_/);
    const url = (await page.locator('main code').filter({ hasText: '/inbound/ins_' }).textContent()) ?? '';
    expect(url).toMatch(new RegExp(`^${w.url}/inbound/ins_`));

    const shipment = await createShipment(w, company.testToken);
    const body = JSON.stringify({
      checkpoints: [
        {
          tracking_number: shipment.tracking_number,
          occurred_at: '2026-11-21T11:00:00Z',
          message: 'At the hub',
          status: 'in_transit',
        },
        { tracking_number: 'WB-NOBODY', occurred_at: '2026-11-21T11:00:00Z', message: 'Unknown' },
      ],
    });
    const at = w.clock.now();
    const sent = await fetch(url, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': 'msg_from_the_carrier',
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign('msg_from_the_carrier', at, body),
      },
    });
    expect(sent.status).toBe(202);

    // The list links to the source; its page has the log, and no longer the secret.
    await page.goto(`${w.url}/dashboard/inbound`);
    await page.getByRole('link', { name: 'City Courier' }).click();
    await page.getByRole('heading', { name: 'Inbound log' }).waitFor();
    const main = (await page.locator('main').textContent()) ?? '';
    expect(main).toContain('msg_from_the_carrier');
    expect(main).toContain('partly applied');
    expect(main).toContain('1 applied, 1 unmatched');
    expect(await page.content()).not.toContain(secret);
    await page.close();
  });
});
