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
import { png, SVG } from './images.ts';
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

/** Issue 40 item 7: the pages do what the API does, for listing images and a company's own review. */
describe.skipIf(!hasChromium)('the portal and store pages do what the API does, in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let developer: Person;
  let owner: Person;
  let published: Json;
  let draft: Json;

  async function pageAs(
    person: Person,
  ): Promise<{ context: BrowserContext; page: Page; failures: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ name: 'waybill_session', value: person.token, url: w.url }]);
    const page = await context.newPage();
    const failures: string[] = [];
    page.on('pageerror', (error) => failures.push(error.message));
    page.on('response', (response) => {
      if (response.status() >= 400) failures.push(`${response.status()} ${new URL(response.url()).pathname}`);
    });
    return { context, page, failures };
  }

  const loaded = (page: Page, selector: string) =>
    page.locator(selector).evaluateAll(
      (images) =>
        images.filter((image) => {
          const shown = image as unknown as { complete: boolean; naturalWidth: number };
          return shown.complete && shown.naturalWidth > 0;
        }).length,
    );

  const draftMedia = async () =>
    (await call(w, 'GET', `/v1/developer/apps/${draft.id}/listing-media`, { token: developer.token })).body;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    w = await startWaybill(reviewerEnv);
    developer = await signUpPerson(w, 'Portal Developer');
    const reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
    const receiver = await startEventsReceiver((m) => (m.headers['webhook-signature'] ? 200 : 400));
    // One app in the store to review, one the developer is still dressing.
    published = await registerPublishable(w, developer, receiver.url, { name: 'Label Printer' });
    const submitted = await submit(w, developer, published.id, { listing: listing(published.scopes) });
    await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/start`, { token: reviewer.token });
    const approved = await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/decision`, {
      token: reviewer.token,
      body: { decision: 'approved' },
    });
    expect(approved.status).toBe(200);
    await receiver.close();
    draft = await registerPublishable(w, developer, receiver.url, { name: 'Returns Desk' });

    const acme = await ownerOfCompany(w, 'Acme Parcels');
    await install(w, { appId: published.id, tenantId: acme.tenantId, userId: acme.owner.id });
    w.clock.advance(8 * DAY);
    owner = await signInAgain(w, acme.owner);
    developer = await signInAgain(w, developer);
    const review = await call(w, 'POST', `/v1/store/apps/${published.id}/reviews`, {
      token: owner.token,
      body: { rating: 3, body: 'Prints labels, slowly.' },
    });
    expect(review.status).toBe(201);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  it('uploads an icon and screenshots from the developer portal, shows them, removes one, and shows a refusal', async () => {
    const { context, page, failures } = await pageAs(developer);
    await page.goto(`${w.url}/developer/apps/${draft.id}/submissions`);
    await page.getByRole('link', { name: 'Icon and screenshots' }).click();
    await page.getByRole('heading', { name: 'Icon and screenshots of Returns Desk' }).waitFor();
    expect(await page.getByText('No icon yet.').count()).toBe(1);

    const icon = page.locator('form[action$="/listing-media/icon"]');
    await icon
      .getByLabel(/Icon: square/)
      .setInputFiles({ name: 'icon.png', mimeType: 'image/png', buffer: await png(512, 512, '#2b6cb0') });
    await icon.getByRole('button', { name: 'Upload the icon' }).click();
    await page.getByText('The icon is uploaded.').waitFor();

    const shots = page.locator('form[action$="/listing-media/screenshots"]');
    for (const hue of ['#c05621', '#2f855a']) {
      await shots
        .getByLabel(/Add a screenshot/)
        .setInputFiles({ name: 'screen.png', mimeType: 'image/png', buffer: await png(1280, 720, hue) });
      await shots.getByRole('button', { name: 'Add the screenshot' }).click();
      await page.getByText('The screenshot is added.').waitFor();
    }
    await page.getByRole('heading', { name: 'Screenshots (2 of 6)' }).waitFor();
    await expect.poll(() => loaded(page, 'img.app-icon.large')).toBe(1);
    await expect.poll(() => loaded(page, 'ul.screenshots img')).toBe(2);
    await page.screenshot({ path: `${SHOTS}/listing-media-page.png`, fullPage: true });
    // The page went through the API's service: the API sees the same set.
    const set = await draftMedia();
    expect(set.icon.name).toMatch(/^icon-/);
    expect(set.screenshots).toHaveLength(2);

    await page.getByRole('link', { name: 'Remove screenshot 1' }).click();
    await page.getByRole('heading', { name: 'Remove screenshot 1 of Returns Desk?' }).waitFor();
    expect((await draftMedia()).screenshots).toHaveLength(2);
    await page.getByRole('button', { name: 'Remove screenshot 1' }).click();
    await page.getByText('The screenshot is removed.').waitFor();
    await page.getByRole('heading', { name: 'Screenshots (1 of 6)' }).waitFor();
    expect((await draftMedia()).screenshots.map((s: Json) => s.name)).toEqual([set.screenshots[1].name]);
    expect(failures).toEqual([]);

    // A file that is not a PNG or JPEG: the service's own refusal, on the page, and nothing stored.
    await shots
      .getByLabel(/Add a screenshot/)
      .setInputFiles({ name: 'drawing.svg', mimeType: 'image/svg+xml', buffer: SVG });
    await shots.getByRole('button', { name: 'Add the screenshot' }).click();
    const refusal = page.locator('.flash.error');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('send a PNG or a JPEG');
    expect(failures).toEqual([`422 /developer/apps/${draft.id}/listing-media/screenshots`]);
    // A square where a 16:9 screenshot belongs: the dimension rule speaks.
    failures.length = 0;
    await shots
      .getByLabel(/Add a screenshot/)
      .setInputFiles({ name: 'square.png', mimeType: 'image/png', buffer: await png(512, 512) });
    await shots.getByRole('button', { name: 'Add the screenshot' }).click();
    await page.getByText('A screenshot must be 16:9').waitFor();
    await page.screenshot({ path: `${SHOTS}/listing-media-refused.png`, fullPage: true });
    expect((await draftMedia()).screenshots).toHaveLength(1);
    await context.close();
  });

  it('refuses an upload without the CSRF token, and another person’s app is not there', async () => {
    const form = new FormData();
    form.set('image', new Blob([new Uint8Array(await png(512, 512))], { type: 'image/png' }), 'icon.png');
    const noToken = await fetch(`${w.url}/developer/apps/${draft.id}/listing-media/icon`, {
      method: 'POST',
      headers: { cookie: `waybill_session=${developer.token}` },
      body: form,
      redirect: 'manual',
    });
    expect(noToken.status).toBe(403);
    const { context, page } = await pageAs(owner);
    const response = await page.goto(`${w.url}/developer/apps/${draft.id}/listing-media`);
    expect(response?.status()).toBe(404);
    await context.close();
  });

  it("edits and deletes the company's own review on the app's store page", async () => {
    const { context, page, failures } = await pageAs(owner);
    await page.goto(`${w.url}/dashboard/store/${published.id}`);
    w.clock.advance(DAY);
    const mine = page.locator('ul.reviews > li').filter({ hasText: 'Prints labels, slowly.' });
    await mine.getByText('Edit the review').click();
    await mine.getByRole('radio', { name: '5 ★' }).check();
    await mine.getByLabel('Your review').fill('Prints labels in two seconds since the update.');
    await page.screenshot({ path: `${SHOTS}/review-edit.png`, fullPage: true });
    await mine.getByRole('button', { name: 'Save the review' }).click();
    await page.getByText('Your review is saved.').waitFor();
    const edited = page.locator('ul.reviews > li').first();
    expect(await edited.locator('.review-body').textContent()).toBe(
      'Prints labels in two seconds since the update.',
    );
    expect(await edited.getByRole('img', { name: '5.0 of 5' }).count()).toBe(1);
    expect(await edited.textContent()).toContain('(edited');
    // The API tells the same story, and the store's average follows.
    const reviews = await call(w, 'GET', `/v1/store/apps/${published.id}/reviews`, { token: owner.token });
    expect(reviews.body.data.map((r: Json) => [r.rating, r.body])).toEqual([
      [5, 'Prints labels in two seconds since the update.'],
    ]);
    expect(
      (await call(w, 'GET', `/v1/store/apps/${published.id}`, { token: owner.token })).body.rating_avg,
    ).toBe(5);

    // An empty text is refused on the page with the service's message; the review stays.
    await edited.getByText('Edit the review').click();
    await edited.getByLabel('Your review').fill('   ');
    await edited.getByRole('button', { name: 'Save the review' }).click();
    await page.getByText('/body must not be empty').waitFor();
    expect(failures).toEqual([`400 /dashboard/store/${published.id}/reviews/${reviews.body.data[0].id}`]);
    failures.length = 0;

    await page.locator('ul.reviews > li').first().getByRole('link', { name: 'Delete the review' }).click();
    // The second question, a page of its own: nothing is deleted yet, and a reload keeps it.
    await page.getByRole('heading', { level: 1, name: /^Delete .*'s review of Label Printer\?$/ }).waitFor();
    expect((await page.reload())?.status()).toBe(200);
    expect(
      (await call(w, 'GET', `/v1/store/apps/${published.id}/reviews`, { token: owner.token })).body.data,
    ).toHaveLength(1);
    await page.getByRole('button', { name: 'Delete the review' }).click();
    await page.getByText('The review was deleted.').waitFor();
    expect(await page.locator('ul.reviews > li').count()).toBe(0);
    expect(
      (await call(w, 'GET', `/v1/store/apps/${published.id}/reviews`, { token: owner.token })).body.data,
    ).toEqual([]);
    expect(failures).toEqual([]);
    await context.close();
  });
});
