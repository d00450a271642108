import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY } from '../../src/lib/clock.ts';
import { install } from '../apps/fixtures.ts';
import { call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { png } from './images.ts';
import {
  listing,
  ownerOfCompany,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signInAgain,
  signUpAs,
  startEventsReceiver,
  submit,
} from './support.ts';

// A test run leaves the committed pictures alone; `WAYBILL_SCREENSHOTS_DIR=docs/screenshots` renews them.
const SHOTS = process.env.WAYBILL_SCREENSHOTS_DIR ?? join(tmpdir(), 'waybill-screenshots');
const XSS_REVIEW = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">Great labels';
const XSS_REPLY = '<b>Thanks</b><script>window.__pwned = 3</script>';

describe.skipIf(!hasChromium)('the store pages in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let developer: Person;
  let reviewer: Person;
  let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;
  let labels: Json;
  let waiting: { id: string };
  const owners: Record<string, { owner: Person; tenantId: string }> = {};

  const company = (name: string) => ownerOfCompany(w, name);
  const signedIn = (person: Person) => signInAgain(w, person);

  async function uploadMedia(app: Json, hue: string) {
    const put = (what: string, method: string, bytes: Buffer) =>
      fetch(`${w.url}/v1/developer/apps/${app.id}/listing-media/${what}`, {
        method,
        headers: { authorization: `Bearer ${developer.token}`, 'content-type': 'image/png' },
        body: new Uint8Array(bytes),
      });
    expect((await put('icon', 'PUT', await png(512, 512, hue))).status).toBe(200);
    expect((await put('screenshots', 'POST', await png(1280, 720, hue))).status).toBe(201);
    expect((await put('screenshots', 'POST', await png(1280, 720, '#888888'))).status).toBe(201);
  }

  async function publishWithMedia(name: string, hue: string, category: string) {
    const app = await registerPublishable(w, developer, receiver.url, { name });
    await uploadMedia(app, hue);
    const submitted = await submit(w, developer, app.id, {
      listing: listing(app.scopes, { category, tagline: `${name}: less work every day` }),
    });
    await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/start`, { token: reviewer.token });
    await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/decision`, {
      token: reviewer.token,
      body: { decision: 'approved' },
    });
    return app;
  }

  async function pageAs(
    person: Person,
    width: number,
  ): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
    const context = await browser.newContext({ viewport: { width, height: 900 } });
    await context.addCookies([{ name: 'waybill_session', value: person.token, url: w.url }]);
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('dialog', (dialog) => {
      errors.push(`dialog: ${dialog.message()}`);
      void dialog.dismiss();
    });
    page.on('response', (response) => {
      if (response.status() >= 400 && !response.url().endsWith('/favicon.ico')) {
        errors.push(`${response.status()} ${response.url()}`);
      }
    });
    return { context, page, errors };
  }

  async function imagesLoaded(page: Page, selector: string): Promise<number> {
    return page.locator(selector).evaluateAll(
      (images) =>
        images.filter((image) => {
          const loaded = image as unknown as { complete: boolean; naturalWidth: number };
          return loaded.complete && loaded.naturalWidth > 0;
        }).length,
    );
  }

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    w = await startWaybill(reviewerEnv);
    developer = await signUpPerson(w, 'Store Developer');
    reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
    receiver = await startEventsReceiver((m) => (m.headers['webhook-signature'] ? 200 : 400));
    labels = await publishWithMedia('Label Printer', '#2b6cb0', 'shipping');
    await publishWithMedia('Returns Desk', '#c05621', 'customer_service');
    await publishWithMedia('Ledger Link', '#2f855a', 'accounting');
    // A submission with new images waits for the reviewer.
    await uploadMedia(labels, '#6b46c1');
    waiting = (await submit(w, developer, labels.id, { listing: listing(labels.scopes) })).body;

    for (const name of ['Acme Parcels', 'Brightside Retail', 'Newcomer Shop'])
      owners[name] = await company(name);
    const acme = owners['Acme Parcels'] as { owner: Person; tenantId: string };
    const bright = owners['Brightside Retail'] as { owner: Person; tenantId: string };
    await install(w, { appId: labels.id, tenantId: acme.tenantId, userId: acme.owner.id });
    await install(w, { appId: labels.id, tenantId: bright.tenantId, userId: bright.owner.id });
    w.clock.advance(8 * DAY);
    const newcomer = owners['Newcomer Shop'] as { owner: Person; tenantId: string };
    await install(w, { appId: labels.id, tenantId: newcomer.tenantId, userId: newcomer.owner.id });
    for (const c of Object.values(owners)) c.owner = await signedIn(c.owner);
    developer = await signedIn(developer);
    reviewer = await signedIn(reviewer);
    const attack = await call(w, 'POST', `/v1/store/apps/${labels.id}/reviews`, {
      token: bright.owner.token,
      body: { rating: 4, body: XSS_REVIEW },
    });
    expect(attack.status).toBe(201);
    const reply = await call(w, 'PUT', `/v1/developer/apps/${labels.id}/reviews/${attack.body.id}/reply`, {
      token: developer.token,
      body: { body: XSS_REPLY },
    });
    expect(reply.status).toBe(200);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  for (const width of [390, 1280]) {
    it(`shows icons, stars and install buckets in the list, and screenshots and reviews on the app page (${width} px)`, async () => {
      const acme = owners['Acme Parcels'] as { owner: Person };
      const { context, page, errors } = await pageAs(acme.owner, width);
      await page.goto(`${w.url}/dashboard/store?sort=rating`);
      await page.getByRole('heading', { name: 'App Store' }).waitFor();
      expect(await page.locator('ul.store-apps > li').count()).toBe(3);
      await page.locator('ul.store-apps img.app-icon').last().scrollIntoViewIfNeeded();
      await expect.poll(() => imagesLoaded(page, 'ul.store-apps img.app-icon')).toBe(3);
      const first = page.locator('ul.store-apps > li').first();
      expect(await first.getByRole('heading').textContent()).toContain('Label Printer');
      expect(await first.getByRole('img', { name: '4.0 of 5' }).count()).toBe(1);
      expect(await first.textContent()).toContain('<10 installs');
      await page.screenshot({ path: `${SHOTS}/store-list-${width}.png`, fullPage: true });

      await first.getByRole('link', { name: 'Label Printer' }).click();
      await page.getByRole('heading', { name: 'Screenshots' }).waitFor();
      await page.locator('ul.screenshots img').last().scrollIntoViewIfNeeded();
      await expect.poll(() => imagesLoaded(page, 'ul.screenshots img')).toBe(2);
      await page.locator('img.app-icon.large').last().scrollIntoViewIfNeeded();
      await expect.poll(() => imagesLoaded(page, 'img.app-icon.large')).toBe(1);
      // The stored-XSS attempt is text: no script ran, no element was made of it.
      const body = page.locator('.review-body').first();
      expect(await body.textContent()).toBe(XSS_REVIEW);
      expect(await page.locator('.reply').first().textContent()).toContain(XSS_REPLY);
      expect(await page.locator('.reviews img, .reviews script, .reviews b').count()).toBe(0);
      expect(
        await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned),
      ).toBeUndefined();
      expect(await page.locator('form.review-form').count()).toBe(1);
      await page.screenshot({ path: `${SHOTS}/app-page-${width}.png`, fullPage: true });
      expect(errors).toEqual([]);
      await context.close();
    });
  }

  it('takes a review from an eligible company, and offers no form to one installed today', async () => {
    const acme = owners['Acme Parcels'] as { owner: Person };
    const { context, page, errors } = await pageAs(acme.owner, 1280);
    await page.goto(`${w.url}/dashboard/store/${labels.id}`);
    await page.getByRole('radio', { name: '5 ★' }).check();
    await page.getByLabel('Your review').fill('Labels print in two seconds. <i>Recommended</i>.');
    await page.getByRole('button', { name: 'Publish the review' }).click();
    await page.getByText('Thank you: your review is published.').waitFor();
    expect(await page.locator('.review-body').allTextContents()).toContain(
      'Labels print in two seconds. <i>Recommended</i>.',
    );
    expect(await page.locator('form.review-form').count()).toBe(0);
    expect(errors).toEqual([]);
    await context.close();

    const newcomer = owners['Newcomer Shop'] as { owner: Person };
    const other = await pageAs(newcomer.owner, 1280);
    await other.page.goto(`${w.url}/dashboard/store/${labels.id}`);
    await other.page.getByRole('heading', { name: 'Reviews' }).waitFor();
    expect(await other.page.locator('form.review-form').count()).toBe(0);
    await other.context.close();
  });

  it('lists reviews in the developer portal with a reply form, escaped', async () => {
    const { context, page, errors } = await pageAs(developer, 1280);
    await page.goto(`${w.url}/developer/apps/${labels.id}`);
    await page.getByRole('link', { name: 'Reviews' }).click();
    await page.getByRole('heading', { name: 'Reviews of Label Printer' }).waitFor();
    const acmeReview = page.locator('li.review', { hasText: 'Acme Parcels' });
    await acmeReview.getByLabel('Reply').fill('Thank you, Acme! <3');
    await acmeReview.getByRole('button', { name: 'Publish the reply' }).click();
    await page.getByText('Your reply is published.').waitFor();
    expect(
      await page.locator('li.review', { hasText: 'Acme Parcels' }).locator('.reply').textContent(),
    ).toContain('Thank you, Acme! <3');
    expect(await page.locator('.reviews script, .reviews b').count()).toBe(0);
    await page.screenshot({ path: `${SHOTS}/developer-reviews-1280.png`, fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  });

  it('shows the reviewer the submitted images beside the published ones', async () => {
    const { context, page, errors } = await pageAs(reviewer, 1280);
    await page.goto(`${w.url}/review/submissions/${waiting.id}`);
    await page.getByRole('heading', { name: /Images/ }).waitFor();
    // Submitted: the icon and three screenshots (one of the new two is the same image as before);
    // in the store: the icon and two.
    await page.locator('.media-compare img').last().scrollIntoViewIfNeeded();
    await expect.poll(() => imagesLoaded(page, '.media-compare img')).toBe(7);
    await page.locator('.media-compare').screenshot({ path: `${SHOTS}/review-console-media-1280.png` });
    expect(errors).toEqual([]);
    await context.close();
  });
});
