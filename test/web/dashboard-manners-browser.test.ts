import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp } from '../apps/fixtures.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  signUpPerson,
  signUpWithEmail,
} from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Receiver, startReceiver } from '../webhooks/api/support.ts';
import { PASSWORD } from './page-client.ts';

/**
 * CONTRACT.md, "The dashboard's manners", driven in Chromium as a person would: every form safe to
 * reload (counted through the API), a second question before anything is lost (the first click
 * changes nothing), each role at home, errors as pages, and a header that fits.
 */
describe.skipIf(!hasChromium)("the dashboard's manners in Chromium", () => {
  let w: TestWaybill;
  let browser: Browser;
  let receiver: Receiver;
  let company: CompanyFixture;
  let page: Page;

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    browser = await launchChromium();
    company = await createCompany(w, 'Manners Freight');
    page = await signedIn(company.owner.email);
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  async function signedIn(email: string, width = 1280): Promise<Page> {
    const context = await browser.newContext({ viewport: { width, height: width < 500 ? 844 : 800 } });
    const p = await context.newPage();
    await p.goto(`${w.url}/signin`);
    await p.getByLabel('E-mail').fill(email);
    await p.getByLabel('Password').fill(PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForLoadState('load');
    return p;
  }

  const endpoints = async () =>
    (await call(w, 'GET', '/v1/webhook-endpoints', { token: company.testToken })).body.data as Array<{
      id: string;
      url: string;
    }>;

  it('adds an endpoint; a reload adds no second one and shows the secret no more', async () => {
    await page.goto(`${w.url}/dashboard/webhooks/new`);
    await page.getByLabel('URL').fill(receiver.url);
    await page.getByLabel('shipment.created').check();
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText('Endpoint added.').waitFor();
    const secret = await page.locator('#secret-0').inputValue();
    expect(secret).toMatch(/^whsec_/);
    expect(page.url()).not.toContain(secret.slice(6, 20));
    await page.reload();
    await page.waitForLoadState('load');
    expect(await endpoints()).toHaveLength(1);
    expect(await page.content()).not.toContain(secret);
  });

  it('replays a delivery once, whatever the reloads', async () => {
    const [endpoint] = await endpoints();
    await createShipment(w, company.testToken);
    const deliveries = async () =>
      (
        await call(w, 'GET', `/v1/webhook-endpoints/${endpoint?.id}/deliveries`, {
          token: company.testToken,
        })
      ).body.data as Array<{ id: string; attempt_count: number }>;
    await expect.poll(async () => (await deliveries()).length).toBe(1);
    const delivery = (await deliveries())[0] as { id: string; attempt_count: number };
    await page.goto(`${w.url}/dashboard/webhooks/deliveries/${delivery.id}`);
    const before = (await deliveries())[0]?.attempt_count ?? 0;
    await page.getByRole('button', { name: /^Replay/ }).click();
    await page.getByText('Replayed:').waitFor();
    expect(page.url()).toBe(`${w.url}/dashboard/webhooks/deliveries/${delivery.id}`);
    const after = (await deliveries())[0]?.attempt_count ?? 0;
    expect(after).toBe(before + 1);
    await page.reload();
    await page.reload();
    expect((await deliveries())[0]?.attempt_count).toBe(after);
    expect(await page.getByText('Replayed:').count()).toBe(0);
  });

  it('creates a token shown once; a reload makes no second token', async () => {
    const tokens = async () =>
      (
        await w.ctx.db
          .selectFrom('api_tokens')
          .select('name')
          .where('tenant_id', '=', company.tenantId)
          .where('name', '=', 'Reload proof')
          .execute()
      ).length;
    await page.goto(`${w.url}/dashboard/api-tokens`);
    await page.getByLabel('Name').fill('Reload proof');
    await page.getByLabel('Test data').check();
    await page.getByLabel(/shipments:read/).check();
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByText('shown only once').waitFor();
    const token = await page.locator('#secret-0').inputValue();
    expect((await call(w, 'GET', '/v1/shipments', { token })).status).toBe(200);
    await page.reload();
    expect(await tokens()).toBe(1);
    expect(await page.content()).not.toContain(token);
  });

  it('asks before deleting an endpoint: the first click changes nothing, confirming deletes', async () => {
    const [endpoint] = await endpoints();
    await page.goto(`${w.url}/dashboard/webhooks/${endpoint?.id}`);
    await page.getByRole('link', { name: 'Delete endpoint' }).click();
    await page.getByRole('heading', { name: /^Delete the endpoint/ }).waitFor();
    expect(await endpoints()).toHaveLength(1);
    await page.getByRole('button', { name: 'Delete endpoint' }).click();
    await page.getByText('Endpoint deleted.').waitFor();
    expect(await endpoints()).toHaveLength(0);
  });

  it('asks before erasing a recipient, naming the live shipments it changes', async () => {
    const shipment = await createShipment(w, company.liveToken, {
      recipient_name: 'Erin Erasable',
      recipient_email: 'erin@example.test',
    });
    const read = async () =>
      (await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken })).body;
    await page.goto(`${w.url}/dashboard/privacy-requests`);
    await page.getByLabel('Erase').check();
    await page.getByLabel("Recipient's e-mail").fill('erin@example.test');
    await page.getByRole('button', { name: 'File the request' }).click();
    await page.getByRole('heading', { name: 'Erase erin@example.test?' }).waitFor();
    const question = (await page.locator('main').textContent()) ?? '';
    expect(question).toContain('1 live shipment changes');
    expect(question).toContain(shipment.tracking_number);
    expect((await read()).recipient_name).toBe('Erin Erasable');
    await page.getByRole('button', { name: 'Erase recipient' }).click();
    await page.getByText('Request filed').waitFor();
    expect((await read()).recipient_name).not.toBe('Erin Erasable');
  });

  it('lands a reviewer with no company on the review queue, a developer on the portal', async () => {
    const reviewer = await signUpWithEmail(w, 'reviewer@example.test', 'Rita Reviewer');
    const reviewerPage = await signedIn(reviewer.email);
    await reviewerPage.goto(`${w.url}/dashboard`);
    expect(new URL(reviewerPage.url()).pathname).toBe('/review');
    const developer = await signUpPerson(w, 'Dev Eloper');
    await registerApp(w, developer);
    const developerPage = await signedIn(developer.email);
    await developerPage.goto(`${w.url}/dashboard`);
    expect(new URL(developerPage.url()).pathname).toBe('/developer/apps');
    // The same shell: the sidebar of places, on the portal too.
    expect(await developerPage.getByRole('navigation', { name: 'Places' }).count()).toBe(1);
    const newcomer = await signUpPerson(w, 'New Comer');
    const newcomerPage = await signedIn(newcomer.email);
    await newcomerPage.goto(`${w.url}/dashboard`);
    expect(new URL(newcomerPage.url()).pathname).toBe('/dashboard/companies/new');
  });

  it('answers a missing page inside the dashboard with a page in the shell and a way back', async () => {
    for (const path of [
      '/dashboard/webhooks/ep_missing',
      '/dashboard/no-such-page',
      '/developer/apps/app_nope',
    ]) {
      const response = await page.goto(`${w.url}${path}`);
      expect(response?.status()).toBe(404);
      expect(response?.headers()['content-type']).toContain('text/html');
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toMatch(/Not found|No such app/);
      expect(
        await page.getByRole('link', { name: /Back to|Dashboard|Your companies/ }).count(),
      ).toBeGreaterThan(0);
    }
  });

  it('searches the shipments list by tracking number, reference and recipient', async () => {
    const order = await createShipment(w, company.testToken, {
      recipient_name: 'Searchable Sam',
      external_ref: 'order-1042',
    });
    await createShipment(w, company.testToken, { recipient_name: 'Other Olga' });
    for (const q of [order.tracking_number, 'order-1042', 'Searchable']) {
      await page.goto(`${w.url}/dashboard/shipments`);
      await page.getByLabel('Search').fill(q);
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(/q=/);
      const rows = await page.locator('tbody tr').allTextContents();
      expect(rows).toHaveLength(1);
      expect(rows[0]).toContain('Searchable Sam');
      expect(rows[0]).toContain('order-1042');
    }
  });

  it('keeps the header to one row at 1280 px and a quarter of a 390 px screen, with no sideways scroll', async () => {
    for (const width of [1280, 390]) {
      const p = width === 1280 ? page : await signedIn(company.owner.email, width);
      await p.goto(`${w.url}/dashboard/shipments`);
      const header = (await p.evaluate(
        'document.querySelector("header.top").getBoundingClientRect().height',
      )) as number;
      const chrome = (await p.evaluate(
        'document.querySelector("main").getBoundingClientRect().top',
      )) as number;
      if (width === 1280) expect(header).toBeLessThan(64);
      else expect(chrome).toBeLessThanOrEqual(844 / 4);
      expect(await p.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      // The skip link is the first thing a keyboard reaches.
      await p.keyboard.press('Tab');
      expect(await p.evaluate('document.activeElement.textContent')).toBe('Skip to content');
    }
  });
});
