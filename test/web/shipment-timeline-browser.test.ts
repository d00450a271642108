import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PASSWORD } from './page-client.ts';

/**
 * Issue 51 item 6 and issue 53 item 5: the dashboard's shipment page shows the timeline (not JSON),
 * the carrier, the estimate, the proof of delivery and the recipient's link, and a person adds a
 * checkpoint through its form, safe to reload; bad input is refused in words and writes nothing.
 * Checked through the API, as a person's work is.
 */
describe.skipIf(!hasChromium)("the shipment page's timeline in Chromium", () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let page: Page;
  let shipment: { id: string; tracking_url: string };

  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    company = await createCompany(w, 'Timeline Freight');
    shipment = (await createShipment(w, company.testToken, {
      external_ref: 'order-7',
      carrier: { code: 'city-courier', name: 'City Courier' },
      carrier_tracking_number: 'CC-991-204',
      estimated_delivery: {
        earliest: '2026-11-23T08:00:00Z',
        latest: '2026-11-23T18:00:00Z',
        source: 'carrier',
      },
    })) as { id: string; tracking_url: string };
    // Times are rewritten in the viewer's zone (test/web/local-time-browser.test.ts): UTC here.
    const context = await browser.newContext({
      viewport: { width: 1280, height: 800 },
      timezoneId: 'UTC',
      locale: 'en-US',
    });
    page = await context.newPage();
    await page.goto(`${w.url}/signin`);
    await page.getByLabel('E-mail').fill(company.owner.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState('load');
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  const checkpoints = async () => {
    const answer = await call(w, 'GET', `/v1/shipments/${shipment.id}/checkpoints`, {
      token: company.testToken,
    });
    expect(answer.status, answer.text).toBe(200);
    return answer.body.data as Array<{ message: string; source: string; status: string | null }>;
  };
  const shipmentPage = () => `${w.url}/dashboard/shipments/${shipment.id}`;

  it('shows the carrier, its number, the estimate and the tracking link; no checkpoint yet', async () => {
    await page.goto(shipmentPage());
    const tracking = page.getByRole('region', { name: 'Tracking' });
    await expect.poll(() => tracking.textContent()).toContain('City Courier');
    const text = (await tracking.textContent()) ?? '';
    expect(text).toContain('city-courier');
    expect(text).toContain('CC-991-204');
    await expect
      .poll(async () => (await tracking.textContent()) ?? '')
      .toMatch(/Nov 23, 2026, 8:00\sAM UTC to Nov 23, 2026, 6:00\sPM UTC/);
    expect(await page.getByRole('textbox', { name: "Recipient's tracking page" }).inputValue()).toBe(
      shipment.tracking_url,
    );
    expect(await page.getByText('No checkpoints yet').count()).toBe(1);
  });

  it('adds a checkpoint through the form; a reload adds no second one; the timeline shows it', async () => {
    await page.goto(shipmentPage());
    await page.getByLabel('When (UTC)').fill('2026-11-21T10:30');
    await page.getByLabel('City (optional)').fill('Leipzig');
    await page.getByLabel('Region (optional)').fill('Saxony');
    await page.getByLabel('Country code (optional)').fill('de');
    await page.getByLabel('Message').fill('Arrived at the hub');
    await page.getByLabel('New status (optional)').selectOption('in_transit');
    await page.getByLabel('Sub-status (optional)').selectOption('in_transit.customs');
    await page.getByRole('button', { name: 'Add checkpoint' }).click();
    await page.getByText('Checkpoint added.').waitFor();
    expect(page.url()).toBe(shipmentPage());
    await page.reload();
    await page.waitForLoadState('load');
    expect(await page.getByText('Checkpoint added.').count()).toBe(0);

    const timeline = await checkpoints();
    expect(timeline).toHaveLength(1);
    expect(timeline[0]).toMatchObject({
      message: 'Arrived at the hub',
      source: 'dashboard',
      status: 'in_transit',
    });
    const moved = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.testToken });
    expect(moved.body).toMatchObject({ status: 'in_transit', sub_status: 'in_transit.customs' });

    const item = page.getByRole('list', { name: 'Checkpoints, newest first' }).getByRole('listitem');
    expect(await item.count()).toBe(1);
    const shown = (await item.textContent()) ?? '';
    expect(shown).toContain('Leipzig, Saxony, DE');
    expect(shown).toContain('Arrived at the hub');
    expect(shown).toContain('in transit: customs');
    expect(shown).toContain('1 hour ago');
    expect(shown).toContain('dashboard');
    // The history is a timeline, not JSON.
    expect(shown).not.toContain('{');
  });

  it('an older checkpoint is kept in the timeline, not applied, newest first', async () => {
    await page.getByLabel('When (UTC)').fill('2026-11-21T09:00');
    await page.getByLabel('Message').fill('Picked up at the shop');
    await page.getByLabel('New status (optional)').selectOption('picked_up');
    await page.getByRole('button', { name: 'Add checkpoint' }).click();
    await page.getByText('Kept in the timeline, not applied: older than the newest checkpoint.').waitFor();
    expect((await checkpoints()).map((c) => c.message)).toEqual([
      'Arrived at the hub',
      'Picked up at the shop',
    ]);
    const items = page.getByRole('list', { name: 'Checkpoints, newest first' }).getByRole('listitem');
    expect(await items.allTextContents()).toEqual([
      expect.stringContaining('Arrived at the hub'),
      expect.stringMatching(/not applied[\s\S]*Picked up at the shop/),
    ]);
    const still = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.testToken });
    expect(still.body.status).toBe('in_transit');
  });

  it('a post without the CSRF token is refused and writes nothing', async () => {
    const before = await checkpoints();
    const forged = await page.request.post(`${shipmentPage()}/checkpoints`, {
      form: { occurred_at: '2026-11-21T11:30', message: 'Forged' },
      maxRedirects: 0,
    });
    expect(forged.status()).toBe(403);
    expect(await checkpoints()).toEqual(before);
  });

  it.each([
    ['country', 'XX', 'not a country code'],
    ['sub_status', 'delivered.neighbour', 'goes with another status'],
  ])('a bad %s is refused in words beside the field and writes nothing', async (field, bad, words) => {
    const before = await checkpoints();
    await page.goto(shipmentPage());
    await page.getByLabel('When (UTC)').fill('2026-11-21T11:00');
    await page.getByLabel('Message').fill('Should not be kept');
    if (field === 'country') await page.getByLabel('Country code (optional)').fill(bad);
    else await page.getByLabel('Sub-status (optional)').selectOption(bad);
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.request().method() === 'POST'),
      page.getByRole('button', { name: 'Add checkpoint' }).click(),
    ]);
    // Refused: 303 back to the shipment's page (a reload repeats no POST), the form as typed.
    expect(response.status()).toBe(303);
    await page.waitForURL(shipmentPage());
    await page.waitForLoadState('load');
    const beside = page.locator(`#error-${field}`);
    expect(await beside.textContent()).toContain(words);
    const control = page.locator(`[name="${field}"]`);
    expect(await control.getAttribute('aria-invalid')).toBe('true');
    // The fields come back as typed.
    expect(await page.getByLabel('Message').inputValue()).toBe('Should not be kept');
    expect(await checkpoints()).toEqual(before);
    // Shown once: a reload is the plain form again.
    await page.reload();
    expect(await page.locator(`#error-${field}`).count()).toBe(0);
    expect(await page.getByLabel('Message').inputValue()).toBe('');
  });
});
