import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type Person, signUpPerson } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { JUSTIFICATIONS, registerPublishable, verifyingReceiver } from './support.ts';

describe.skipIf(!hasChromium)('the submission form in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let developer: Person;
  let receiver: Awaited<ReturnType<typeof verifyingReceiver>>;
  const secret = { value: '' };

  beforeAll(async () => {
    w = await startWaybill();
    developer = await signUpPerson(w, 'Browser Developer');
    receiver = await verifyingReceiver(w, () => secret.value);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  it('counts justification characters live, shows only requested scopes, and submits', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    secret.value = app.events_secret;
    const context = await browser.newContext();
    await context.addCookies([{ name: 'waybill_session', value: developer.token, url: w.url }]);
    const page = await context.newPage();
    const scriptErrors: string[] = [];
    page.on('pageerror', (error) => scriptErrors.push(error.message));
    // Chromium asks for /favicon.ico, which Waybill does not have; anything else missing counts.
    page.on('response', (response) => {
      if (response.status() >= 400 && !response.url().endsWith('/favicon.ico')) {
        scriptErrors.push(`${response.status()} ${response.url()}`);
      }
    });
    await page.goto(`${w.url}/developer/apps/${app.id}/submissions`);
    await page.getByRole('link', { name: 'Submit to the App Store' }).click();
    await page.getByRole('heading', { name: 'Submit Route Planner' }).waitFor();

    await page.getByLabel('Tagline').fill('Delivery routes in one click');
    await page.getByLabel('Category').selectOption('shipping');
    await page.getByLabel(/App URL/).fill('https://route-planner.example/start');
    await page.getByLabel('Description in English').fill('Plans delivery routes from your shipments.');
    await page.getByLabel('Descripción en español').fill('Planifica rutas de reparto con tus envíos.');

    // The script hides the justifications of scopes not requested, and shows one when ticked.
    const writeBlock = page.locator('.justification[data-scope="shipments:write"]');
    await expect.poll(() => writeBlock.isHidden()).toBe(true);
    await page.getByRole('checkbox', { name: /Create shipments and change their status/ }).check();
    await expect.poll(() => writeBlock.isVisible()).toBe(true);
    await page.getByRole('checkbox', { name: /Create shipments and change their status/ }).uncheck();
    await expect.poll(() => writeBlock.isHidden()).toBe(true);

    const readField = page.locator('textarea[name="justification_shipments:read"]');
    const readCount = page.locator('#count-shipments-read');
    await expect.poll(() => readCount.textContent()).toBe('0 / 300 characters (at least 20)');
    await readField.pressSequentially('Too short');
    await expect.poll(() => readCount.textContent()).toBe('9 / 300 characters (at least 20)');
    await expect.poll(() => readCount.getAttribute('class')).toContain('bad');
    await readField.fill(JUSTIFICATIONS['shipments:read'] as string);
    await expect
      .poll(() => readCount.textContent())
      .toBe(`${[...(JUSTIFICATIONS['shipments:read'] as string)].length} / 300 characters`);
    await expect.poll(() => readCount.getAttribute('class')).not.toContain('bad');
    await page
      .locator('textarea[name="justification_webhooks:write"]')
      .fill(JUSTIFICATIONS['webhooks:write'] as string);
    await page.getByLabel(/Note to the reviewer/).fill('Submitted from Chromium');

    await page.getByRole('button', { name: 'Submit for review' }).click();
    await page.waitForURL(/\/submissions\?done=submitted$/);
    await page.getByText('Submitted for review.').waitFor();
    expect(await page.locator('.check-result .badge.ok').count()).toBe(3);
    expect(scriptErrors).toEqual([]);

    const submissions = await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions`, {
      token: developer.token,
    });
    expect(submissions.body.data).toHaveLength(1);
    expect(submissions.body.data[0]).toMatchObject({
      status: 'submitted',
      note: 'Submitted from Chromium',
      listing: {
        tagline: 'Delivery routes in one click',
        category: 'shipping',
        description_es: 'Planifica rutas de reparto con tus envíos.',
        scope_justifications: [
          { scope: 'shipments:read', justification: JUSTIFICATIONS['shipments:read'] },
          { scope: 'webhooks:write', justification: JUSTIFICATIONS['webhooks:write'] },
        ],
      },
    });
    // The form does not upload images (test/store/media.test.ts covers listing_media_valid).
    const checks = submissions.body.data[0].checks as { name: string; passed: boolean }[];
    expect(checks.filter((c) => c.name !== 'listing_media_valid').every((c) => c.passed)).toBe(true);
    await context.close();
  });
});
