import * as oauth from 'oauth4webapi';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY } from '../../src/lib/clock.ts';
import { clientAuthOf, discover, insecure, obtainTokens, PASSWORD, type TestApp } from '../oauth/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  type Json,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { registerApp } from './fixtures.ts';
import { WebClient } from './web-client.ts';

const REDIRECT = 'http://localhost:8080/callback';
const SCOPE = 'shipments:read webhooks:write';

let w: TestWaybill;
let as: oauth.AuthorizationServer;
let developer: Person;
let app: TestApp & { id: string };

beforeAll(async () => {
  w = await startWaybill();
  as = await discover(w);
  developer = await signUpPerson(w, 'Console Developer');
  const created = await registerApp(w, developer, { name: 'Label Loop' });
  app = {
    id: created.id,
    clientId: created.client_id,
    clientSecret: created.client_secret,
    redirectUri: REDIRECT,
    kind: 'confidential',
  };
});
afterAll(async () => {
  await w?.close();
});

const client = () => ({ client_id: app.clientId });

async function uninstallWithReason(company: CompanyFixture, reason: string, words: string) {
  const { body } = await call(w, 'GET', `/v1/companies/${company.tenantId}/installations`, {
    token: company.owner.token,
  });
  const installation = (body.data as Json[]).find((i) => i.app_id === app.id);
  const browser = new WebClient(w);
  await browser.signIn(company.owner.email, PASSWORD);
  // The link opens the question, a page of its own that asks why; confirming uninstalls.
  const question = await browser.get(`/dashboard/apps/${installation.id}/uninstall`);
  expect(question.status).toBe(200);
  expect(question.text).toContain('Uninstall Label Loop?');
  expect(question.text).toContain('Why are you uninstalling Label Loop?');
  const removed = await browser.post(`/dashboard/apps/${installation.id}/uninstall`, question.text, {
    reason,
    reason_text: words,
    confirmed: 'yes',
  });
  expect(removed.status).toBe(303);
}

describe('the developer console API', () => {
  let alpha: CompanyFixture;
  let beta: CompanyFixture;

  it("counts the app's installs, uninstalls, API calls and token grants, and lists its installations", async () => {
    alpha = await createCompany(w, 'Alpha Freight');
    beta = await createCompany(w, 'Beta Parcels');
    const alphaTokens = await obtainTokens(w, as, app, alpha.owner, { scope: SCOPE });
    await obtainTokens(w, as, app, beta.owner, { scope: SCOPE });
    const appToken = alphaTokens.access_token;

    for (let i = 0; i < 3; i++) {
      expect((await call(w, 'GET', '/v1/shipments', { token: appToken })).status).toBe(200);
    }
    for (let i = 0; i < 2; i++) {
      const refused = await call(w, 'POST', '/v1/shipments', { token: appToken, body: {} });
      expect(refused.body.code).toBe('auth.insufficient_scope');
    }
    const missing = await call(w, 'GET', '/v1/shipments/shp_missing', { token: appToken });
    expect(missing.body.code).toBe('shipment.not_found');

    const refreshed = await oauth.refreshTokenGrantRequest(
      as,
      client(),
      clientAuthOf(app),
      alphaTokens.refresh_token as string,
      insecure,
    );
    await oauth.processRefreshTokenResponse(as, client(), refreshed);
    // The spent refresh token again, after the 30 s race window: refused with invalid_grant.
    w.clock.advance(31_000);
    const reused = await oauth.refreshTokenGrantRequest(
      as,
      client(),
      clientAuthOf(app),
      alphaTokens.refresh_token as string,
      insecure,
    );
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as Json).error).toBe('invalid_grant');

    await uninstallWithReason(beta, 'missing_features', 'We need label printing');

    const stats = await call(w, 'GET', `/v1/developer/apps/${app.id}/stats?window=24h`, {
      token: developer.token,
    });
    expect(stats.status).toBe(200);
    expect(stats.body.installations).toEqual({ active: 1, installed: 2, uninstalled: 1 });
    expect(stats.body.api).toEqual({
      requests: 6,
      by_status: { '2xx': 3, '4xx': 3, '5xx': 0 },
      top_errors: [
        { code: 'auth.insufficient_scope', count: 2 },
        { code: 'shipment.not_found', count: 1 },
      ],
    });
    expect(stats.body.tokens).toEqual({
      issued: 2,
      refreshed: 1,
      invalid_grant: 1,
      invalid_grant_anonymous: 0,
    });
    expect(stats.body.daily).toHaveLength(24);
    const thisHour = stats.body.daily[23];
    expect(thisHour).toMatchObject({ installs: 2, uninstalls: 1, api_requests: 6, api_errors: 3 });
    expect(thisHour.at).toBe(
      new Date(Math.floor(w.clock.now().getTime() / 3_600_000) * 3_600_000).toISOString(),
    );

    const listed = await call(w, 'GET', `/v1/developer/apps/${app.id}/installations`, {
      token: developer.token,
    });
    expect(listed.status).toBe(200);
    const byCompany = new Map((listed.body.data as Json[]).map((i) => [i.company_name, i]));
    expect(byCompany.get('Alpha Freight')).toMatchObject({
      tenant_id: alpha.tenantId,
      customer_account_id: null,
      scopes: ['shipments:read', 'webhooks:write'],
      status: 'active',
      uninstalled_at: null,
      uninstall_reason: null,
    });
    expect(byCompany.get('Beta Parcels')).toMatchObject({
      tenant_id: beta.tenantId,
      status: 'uninstalled',
      uninstalled_at: w.clock.now().toISOString(),
      uninstall_reason: 'Missing features: We need label printing',
    });
    const uninstalled = await call(
      w,
      'GET',
      `/v1/developer/apps/${app.id}/installations?status=uninstalled`,
      {
        token: developer.token,
      },
    );
    expect((uninstalled.body.data as Json[]).map((i) => i.company_name)).toEqual(['Beta Parcels']);
    // The app's own event says nothing of the reason (its data is fixed by the specification).
    const reasons = await w.ctx.db.selectFrom('events').select('payload').execute();
    expect(JSON.stringify(reasons)).not.toContain('label printing');
  });

  it('shows an installation whose approver left the company as needing approval', async () => {
    const gamma = await createCompany(w, 'Gamma Goods');
    const admin = await signUpPerson(w, 'Gamma Admin');
    const added = await call(w, 'POST', `/v1/companies/${gamma.tenantId}/members`, {
      token: gamma.owner.token,
      body: { email: admin.email, role: 'admin' },
    });
    expect(added.status).toBe(201);
    await obtainTokens(w, as, app, admin, { scope: SCOPE });
    const before = await call(w, 'GET', `/v1/developer/apps/${app.id}/installations`, {
      token: developer.token,
    });
    expect((before.body.data as Json[]).find((i) => i.tenant_id === gamma.tenantId)?.status).toBe('active');
    const removed = await call(w, 'DELETE', `/v1/companies/${gamma.tenantId}/members/${admin.id}`, {
      token: gamma.owner.token,
    });
    expect(removed.status).toBe(204);
    const after = await call(w, 'GET', `/v1/developer/apps/${app.id}/installations?status=needs_approval`, {
      token: developer.token,
    });
    expect((after.body.data as Json[]).map((i) => i.tenant_id)).toEqual([gamma.tenantId]);
  });

  it('moves its windows with the clock: a month later the installs are history, the active one stays', async () => {
    const before = await call(w, 'GET', `/v1/developer/apps/${app.id}/stats?window=30d`, {
      token: developer.token,
    });
    expect(before.body.daily).toHaveLength(30);
    expect(before.body.installations.installed).toBe(3);
    w.clock.advance(31 * DAY);
    // A session does not last a month: sign in again.
    const session = await call(w, 'POST', '/v1/auth/sessions', {
      body: { email: developer.email, password: PASSWORD },
    });
    developer = { ...developer, token: session.body.token };
    const later = await call(w, 'GET', `/v1/developer/apps/${app.id}/stats?window=30d`, {
      token: developer.token,
    });
    expect(later.body.installations).toEqual({ active: 1, installed: 0, uninstalled: 0 });
    expect(later.body.api.requests).toBe(0);
    expect(later.body.tokens).toEqual({
      issued: 0,
      refreshed: 0,
      invalid_grant: 0,
      invalid_grant_anonymous: 0,
    });
  });

  it("answers only the app's developer, by session token", async () => {
    const stranger = await signUpPerson(w, 'Other Developer');
    for (const path of ['installations', 'stats']) {
      const url = `/v1/developer/apps/${app.id}/${path}`;
      expect((await call(w, 'GET', url, { token: stranger.token })).body.code).toBe('app.not_found');
      expect((await call(w, 'GET', url, { token: alpha.liveToken })).body.code).toBe('auth.session_required');
      expect((await call(w, 'GET', url)).status).toBe(401);
    }
    const bad = await call(w, 'GET', `/v1/developer/apps/${app.id}/stats?window=1y`, {
      token: developer.token,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation.failed');
    const badStatus = await call(w, 'GET', `/v1/developer/apps/${app.id}/installations?status=gone`, {
      token: developer.token,
    });
    expect(badStatus.body.code).toBe('validation.failed');
  });
});

describe.skipIf(!hasChromium)('the developer console page, in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('a company uninstalls with a reason, and the app page shows it with the charts and figures', async () => {
    const delta = await createCompany(w, 'Delta Depot');
    await obtainTokens(w, as, app, delta.owner, { scope: SCOPE });

    const company = await browser.newPage();
    await company.goto(`${w.url}/signin?return_to=${encodeURIComponent('/dashboard/apps')}`);
    await company.getByLabel('E-mail').fill(delta.owner.email);
    await company.getByLabel('Password').fill(PASSWORD);
    await company.getByRole('button', { name: 'Sign in' }).click();
    await company.getByRole('heading', { name: 'Installed apps' }).waitFor();
    await company.getByRole('link', { name: 'Uninstall Label Loop' }).click();
    // The second question, on its own page, asks why; confirming uninstalls.
    await company.getByRole('heading', { name: 'Uninstall Label Loop?' }).waitFor();
    await company.getByLabel(/Why are you uninstalling Label Loop/).selectOption('too_expensive');
    await company.getByLabel('Anything to add?').fill('Cheaper elsewhere');
    await company.getByRole('button', { name: 'Uninstall Label Loop' }).click();
    await company.getByText('Label Loop was uninstalled.').waitFor();

    const portal = await browser.newPage();
    await portal.goto(`${w.url}/signin?return_to=${encodeURIComponent(`/developer/apps/${app.id}`)}`);
    await portal.getByLabel('E-mail').fill(developer.email);
    await portal.getByLabel('Password').fill(PASSWORD);
    await portal.getByRole('button', { name: 'Sign in' }).click();
    await portal.getByRole('heading', { name: 'How the app is doing' }).waitFor();
    expect(await portal.locator('[data-figure="uninstalled"]').textContent()).toBe('1');
    expect(await portal.locator('[data-figure="installed"]').textContent()).toBe('1');
    const charts = portal.locator('.console svg.chart');
    expect(await charts.count()).toBe(2);
    expect(await charts.first().getAttribute('aria-label')).toMatch(/^Installs and uninstalls per day/);
    // Thirty bars a chart, one a day; today's shows the install and the uninstall.
    expect(await charts.first().locator('g').count()).toBe(30);
    expect(await charts.first().locator('g').last().locator('title').textContent()).toMatch(
      /: 1 installs, 1 uninstalls$/,
    );
    const row = portal.locator('table.installations tr', { hasText: 'Delta Depot' });
    expect(await row.textContent()).toContain('Too expensive: Cheaper elsewhere');
    expect(await row.textContent()).toContain('uninstalled');
  });
});
