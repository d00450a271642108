import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { install, registerApp } from '../apps/fixtures.ts';
import { type Receiver, startReceiver, testWorker } from '../delivery/support.ts';
import { PASSWORD } from '../oauth/support.ts';
import { call, createCompany, type Person, signUpPerson } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

describe.skipIf(!hasChromium)('the app events page of the portal, in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let receiver: Receiver;
  let developer: Person;
  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    developer = await signUpPerson(w, 'Events Developer');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  it('lists a failed and a succeeded message, and replays the failed one', async () => {
    const app = await registerApp(w, developer, { events_url: receiver.url });
    const happy = await createCompany(w, 'Happy Co');
    const unlucky = await createCompany(w, 'Unlucky Co');
    for (const company of [happy, unlucky]) {
      const installation = await install(w, {
        appId: app.id,
        tenantId: company.tenantId,
        userId: company.owner.id,
      });
      await call(w, 'DELETE', `/v1/companies/${company.tenantId}/installations/${installation.id}`, {
        token: company.owner.token,
      });
    }
    // The app's receiver fails the unlucky company's message, once.
    receiver.answer = (message, res) => {
      res.statusCode = message.body.includes(unlucky.tenantId) ? 503 : 200;
      res.end(res.statusCode === 200 ? 'thanks' : 'try later');
    };
    const worker = testWorker(w);
    await worker.tick();
    await worker.stop();
    receiver.answer = (_m, res) => res.end('thanks now');

    const page = await browser.newPage();
    await page.goto(
      `${w.url}/signin?return_to=${encodeURIComponent(`/developer/apps/${app.id}/event-messages`)}`,
    );
    await page.getByLabel('E-mail').fill(developer.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /App events of/ }).waitFor();
    const failed = page.locator(`tr:has-text("${unlucky.tenantId}")`);
    const succeeded = page.locator(`tr:has-text("${happy.tenantId}")`);
    expect(await failed.getAttribute('data-status')).toBe('pending');
    expect(await failed.textContent()).toContain('503');
    expect(await failed.textContent()).toContain('try later');
    expect(await succeeded.getAttribute('data-status')).toBe('succeeded');

    await failed.getByRole('button', { name: 'Replay' }).click();
    await page.getByText('Sent again').waitFor();
    const replayed = page.locator(`tr:has-text("${unlucky.tenantId}")`);
    expect(await replayed.getAttribute('data-status')).toBe('succeeded');
    expect(await replayed.textContent()).toContain('thanks now');
    await page.close();
  });
});
