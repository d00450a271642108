import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { install } from '../apps/fixtures.ts';
import { png } from '../store/images.ts';
import {
  listing,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signUpAs,
  startEventsReceiver,
  submit,
} from '../store/support.ts';
import { type CompanyFixture, call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * CONTRACT.md, "The dashboard's manners": a second question before anything is lost, as a page of
 * its own reached by GET that changes nothing. For each of removing a member, uninstalling an app,
 * suspending an app in the review console and removing a listing screenshot, in Chromium: the
 * first click changes nothing (read through the HTTP API), reloading the question works, confirming
 * does it, and reloading after repeats nothing.
 */
describe.skipIf(!hasChromium)('second questions are pages of their own, in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let member: Person;
  let developer: Person;
  let reviewer: Person;
  let app: Json;
  let submissionId: string;

  beforeAll(async () => {
    w = await startWaybill(reviewerEnv);
    browser = await launchChromium();
    const owner = await signUpPerson(w, 'Olive Owner');
    const created = await call(w, 'POST', '/v1/companies', {
      token: owner.token,
      body: { name: 'Confirm Freight' },
    });
    expect(created.status, created.text).toBe(201);
    company = { owner, tenantId: created.body.id, liveToken: '', testToken: '' };
    member = await signUpPerson(w, 'Morgan Member');
    const joined = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: owner.token,
      body: { email: member.email, role: 'member' },
    });
    expect(joined.status, joined.text).toBe(201);

    developer = await signUpPerson(w, 'Dana Developer');
    reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Rita Reviewer');
    const receiver = await startEventsReceiver((m) => (m.headers['webhook-signature'] ? 200 : 400));
    app = await registerPublishable(w, developer, receiver.url, { name: 'Route Ruler' });
    const submitted = await submit(w, developer, app.id, { listing: listing(app.scopes) });
    expect(submitted.status, submitted.text).toBe(201);
    submissionId = submitted.body.id;
    await receiver.close();
    await install(w, { appId: app.id, tenantId: company.tenantId, userId: owner.id });
    for (const hue of ['#3366cc', '#22aa55']) {
      const shot = await fetch(`${w.url}/v1/developer/apps/${app.id}/listing-media/screenshots`, {
        method: 'POST',
        headers: { authorization: `Bearer ${developer.token}`, 'content-type': 'image/png' },
        body: new Uint8Array(await png(1280, 720, hue)),
      });
      expect(shot.status).toBe(201);
    }
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  async function pageAs(person: Person): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ name: 'waybill_session', value: person.token, url: w.url }]);
    return context.newPage();
  }

  /** The question's page, reloaded: still there (200), still asking, nothing changed. */
  async function reloadQuestion(page: Page, heading: string) {
    const here = page.url();
    const reloaded = await page.reload();
    expect(reloaded?.status()).toBe(200);
    expect(reloaded?.request().method()).toBe('GET');
    expect(page.url()).toBe(here);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  /** After confirming: the result page, by GET; its reload answers 200 and does not say it again. */
  async function reloadResult(page: Page, flash: string) {
    const reloaded = await page.reload();
    expect(reloaded?.status()).toBe(200);
    expect(reloaded?.request().method()).toBe('GET');
    return page.getByText(flash).count();
  }

  it('removes a member only once asked, on a page a reload keeps', async () => {
    const members = async () =>
      (
        (await call(w, 'GET', `/v1/companies/${company.tenantId}/members`, { token: company.owner.token }))
          .body.data as Json[]
      ).map((m) => m.user_id);
    const page = await pageAs(company.owner);
    await page.goto(`${w.url}/dashboard/members`);
    await page.getByRole('link', { name: 'Remove Morgan Member' }).click();
    const heading = 'Remove Morgan Member from Confirm Freight?';
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/dashboard/members/${member.id}/remove`);
    expect(await page.locator('main').textContent()).toContain(member.email);
    expect(await members()).toContain(member.id);
    await reloadQuestion(page, heading);
    expect(await members()).toContain(member.id);

    await page.getByRole('button', { name: 'Remove Morgan Member' }).click();
    await page.getByText('Morgan Member was removed.').waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/members');
    expect(await members()).not.toContain(member.id);
    const before = await members();
    expect(await reloadResult(page, 'Morgan Member was removed.')).toBe(0);
    expect(await members()).toEqual(before);
    // The question of someone no longer there is a 404 page in the shell.
    const gone = await page.goto(`${w.url}/dashboard/members/${member.id}/remove`);
    expect(gone?.status()).toBe(404);
    await page.context().close();
  });

  it('uninstalls an app only once asked, with the reason given on the question page', async () => {
    const installations = async () =>
      (
        (
          await call(w, 'GET', `/v1/companies/${company.tenantId}/installations`, {
            token: company.owner.token,
          })
        ).body.data as Json[]
      ).filter((i) => i.app_id === app.id);
    const page = await pageAs(company.owner);
    await page.goto(`${w.url}/dashboard/apps`);
    await page.getByRole('link', { name: 'Uninstall Route Ruler' }).click();
    const heading = 'Uninstall Route Ruler?';
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    expect(await installations()).toHaveLength(1);
    await reloadQuestion(page, heading);
    expect(await installations()).toHaveLength(1);

    await page.getByLabel(/Why are you uninstalling Route Ruler/).selectOption('too_expensive');
    await page.getByLabel('Anything to add?').fill('Cheaper elsewhere');
    await page.getByRole('button', { name: 'Uninstall Route Ruler' }).click();
    await page.getByText('Route Ruler was uninstalled.').waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/apps');
    expect(await installations()).toHaveLength(0);
    expect(await reloadResult(page, 'Route Ruler was uninstalled.')).toBe(0);
    expect(await installations()).toHaveLength(0);
    await page.context().close();
  });

  it('removes a listing screenshot only once asked', async () => {
    const screenshots = async () =>
      (
        (await call(w, 'GET', `/v1/developer/apps/${app.id}/listing-media`, { token: developer.token })).body
          .screenshots as Json[]
      ).map((s) => s.name);
    const [first, second] = await screenshots();
    const page = await pageAs(developer);
    await page.goto(`${w.url}/developer/apps/${app.id}/listing-media`);
    await page.getByRole('link', { name: 'Remove screenshot 1' }).click();
    const heading = 'Remove screenshot 1 of Route Ruler?';
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    expect(await page.getByRole('img', { name: /Screenshot 1, to be removed/ }).count()).toBe(1);
    expect(await screenshots()).toEqual([first, second]);
    await reloadQuestion(page, heading);
    expect(await screenshots()).toEqual([first, second]);

    await page.getByRole('button', { name: 'Remove screenshot 1' }).click();
    await page.getByText('The screenshot is removed.').waitFor();
    expect(new URL(page.url()).pathname).toBe(`/developer/apps/${app.id}/listing-media`);
    expect(await screenshots()).toEqual([second]);
    await reloadResult(page, 'The screenshot is removed.');
    expect(await screenshots()).toEqual([second]);
    await page.context().close();
  });

  it("suspends an app in the review console only once asked, the reason given on the question's page", async () => {
    const status = async () =>
      (await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token })).body.status;
    const page = await pageAs(reviewer);
    await page.goto(`${w.url}/review/submissions/${submissionId}`);
    await page.getByRole('link', { name: 'Suspend', exact: true }).click();
    const heading = 'Suspend Route Ruler?';
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/review/apps/${app.id}/suspend`);
    expect(await status()).toBe('private');
    await reloadQuestion(page, heading);
    expect(await status()).toBe('private');

    await page.getByLabel('Reason').fill('Sends spam to recipients');
    await page.getByRole('button', { name: 'Suspend Route Ruler' }).click();
    await page.getByText('Done: the app status changed').waitFor();
    expect(new URL(page.url()).pathname).toBe(`/review/submissions/${submissionId}`);
    expect(await status()).toBe('suspended');
    await reloadResult(page, 'Done: the app status changed');
    expect(await status()).toBe('suspended');
    // A repeated suspend would be refused ("already suspended"); the reload shows no such refusal.
    expect(await page.getByText('already suspended').count()).toBe(0);
    // Cancel on the question goes back to the submission.
    await page.goto(`${w.url}/review/apps/${app.id}/delist?submission_id=${submissionId}`);
    await page.getByRole('link', { name: 'Cancel' }).click();
    expect(new URL(page.url()).pathname).toBe(`/review/submissions/${submissionId}`);
    await page.context().close();
  });
});
