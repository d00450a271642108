import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient, shipmentIds, signInInBrowser, signUpInBrowser } from './page-client.ts';

describe('dashboard access', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('sends a signed-out person to sign in, and back to the page afterwards', async () => {
    const client = new PageClient(w);
    const page = await client.get('/dashboard/shipments?status=draft');
    expect(page.status).toBe(303);
    expect(page.location).toBe(
      `/signin?return_to=${encodeURIComponent('/dashboard/shipments?status=draft')}`,
    );
    expect((await client.get('/dashboard/events')).location).toMatch(/^\/signin\?return_to=/);
  });

  it('lands a new person on the company form, then on their shipments', async () => {
    const { client } = await signUpInBrowser(w, 'Newcomer');
    const first = await client.get('/dashboard');
    expect(first.location).toBe('/dashboard/shipments');
    const shipments = await client.get('/dashboard/shipments');
    expect(shipments.location).toBe('/dashboard/companies/new');
    const form = await client.get('/dashboard/companies/new');
    expect(form.headers.get('cache-control')).toBe('no-store');
    const created = await client.post('/dashboard/companies', { name: 'Newcomer & Sons' });
    const landed = await client.follow(created);
    expect(landed.status).toBe(200);
    expect(landed.text).toContain('Newcomer &amp; Sons is ready.');
    expect(landed.headers.get('cache-control')).toBe('no-store');
    expect(landed.headers.get('content-security-policy')).toContain("script-src 'self'");
    // No inline script or style; the one script is the same-origin file that puts times in the viewer's zone.
    expect(landed.text).not.toMatch(/<script(?! src="\/static\/(local-time|copy)\.js")|style="/);
  });

  it('refuses a form posted without its CSRF token and changes nothing', async () => {
    const { client } = await signUpInBrowser(w, 'Careful');
    await client.post('/dashboard/companies', { name: 'Careful Ltd' });
    await client.get('/dashboard/shipments/new');
    const form = {
      recipient_name: 'Forged',
      currency: 'EUR',
      payment_mode: 'prepaid',
      weight_grams: '100',
      status: 'confirmed',
    };
    const missing = await client.request('POST', '/dashboard/shipments', form);
    expect(missing.status).toBe(403);
    expect(missing.headers.get('content-type')).toContain('text/html');
    const wrong = await client.request('POST', '/dashboard/shipments', { ...form, _csrf: 'not-the-token' });
    expect(wrong.status).toBe(403);
    expect((await client.get('/dashboard/shipments')).text).not.toContain('Forged');
    expect(shipmentIds((await client.get('/dashboard/events')).text)).toEqual([]);
    // The same form with its token goes through, so the refusals above were about the token.
    expect((await client.post('/dashboard/shipments', form)).status).toBe(303);
    expect((await client.get('/dashboard/shipments')).text).toContain('Forged');
  });

  it('switching to test data hides live shipments, and back', async () => {
    const company = await createCompany(w, 'Switchers');
    const live = await createShipment(w, company.liveToken, { recipient_name: 'Live Larry' });
    await createShipment(w, company.testToken, { recipient_name: 'Test Tina' });
    const client = await signInInBrowser(w, company.owner.email);
    const toLive = await client.get(
      `/dashboard/switch?tenant=${company.tenantId}&mode=live&return_to=/dashboard/shipments`,
    );
    expect(toLive.location).toBe('/dashboard/shipments');
    const livePage = await client.get('/dashboard/shipments');
    expect(livePage.text).toContain('Live Larry');
    expect(livePage.text).not.toContain('Test Tina');
    await client.get(`/dashboard/switch?tenant=${company.tenantId}&mode=test&return_to=/dashboard/shipments`);
    const testPage = await client.get('/dashboard/shipments');
    expect(testPage.text).toContain('Test Tina');
    expect(testPage.text).not.toContain('Live Larry');
    expect(testPage.text).toContain('Viewing test data');
    const hidden = await client.get(`/dashboard/shipments/${live.id}`);
    expect(hidden.status).toBe(404);
    expect(hidden.text).toContain('Not found');
    expect(hidden.text).not.toContain('Live Larry');
  });

  it('switches only to a company the person belongs to, and returns only to this site', async () => {
    const mine = await createCompany(w, 'Mine');
    const theirs = await createCompany(w, 'Theirs');
    const client = await signInInBrowser(w, mine.owner.email);
    const foreign = await client.get(`/dashboard/switch?tenant=${theirs.tenantId}&mode=live`);
    expect(foreign.status).toBe(404);
    expect(client.cookies.has('waybill_view')).toBe(false);
    const offsite = await client.get(
      `/dashboard/switch?tenant=${mine.tenantId}&mode=live&return_to=//evil.example`,
    );
    expect(offsite.location).toBe('/dashboard');
  });

  it('shows a merchant member only their account’s shipments', async () => {
    const company = await createCompany(w, 'Marketplace');
    const account = await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
      token: company.owner.token,
      body: { name: 'Shop A' },
    });
    const merchant = await signUpPerson(w, 'Merchant');
    const added = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: merchant.email, role: 'merchant_member', customer_account_id: account.body.id },
    });
    expect(added.status).toBe(201);
    const own = await createShipment(w, company.testToken, {
      recipient_name: 'Shop A buyer',
      customer_account_id: account.body.id,
    });
    const other = await createShipment(w, company.testToken, { recipient_name: 'Company buyer' });
    const client = await signInInBrowser(w, merchant.email);
    const list = await client.get('/dashboard/shipments');
    expect(shipmentIds(list.text)).toEqual([own.id]);
    expect((await client.get(`/dashboard/shipments/${other.id}`)).status).toBe(404);
    // Asking the switcher for "all accounts" does not widen a merchant member's view.
    await client.get(`/dashboard/switch?tenant=${company.tenantId}&mode=test&account=`);
    expect(shipmentIds((await client.get('/dashboard/shipments')).text)).toEqual([own.id]);
    const events = await client.get('/dashboard/events');
    expect(shipmentIds(events.text)).toEqual([own.id]);
    // The owner sees both, and may narrow to the account.
    const owner = await signInInBrowser(w, company.owner.email);
    expect(shipmentIds((await owner.get('/dashboard/shipments')).text).sort()).toEqual(
      [own.id, other.id].sort(),
    );
    await owner.get(`/dashboard/switch?tenant=${company.tenantId}&mode=test&account=${account.body.id}`);
    expect(shipmentIds((await owner.get('/dashboard/shipments')).text)).toEqual([own.id]);
  });
});

describe('an address that is no page', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('is a page with a way back for a browser, and problem details for every API client', async () => {
    const html = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const page = await fetch(`${w.url}/store`, { headers: { accept: html } });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const text = await page.text();
    expect(text).toContain('<h1>Not found</h1>');
    expect(text).toContain('href="/dashboard"');

    for (const path of ['/v1/nothing-here', '/oauth/nothing', '/mcp/nothing', '/.well-known/nothing']) {
      const api = await fetch(`${w.url}${path}`, { headers: { accept: html } });
      expect(api.status, path).toBe(404);
      expect(api.headers.get('content-type'), path).toMatch(/^application\/problem\+json/);
    }
    const json = await fetch(`${w.url}/store`, { headers: { accept: 'application/json' } });
    expect(json.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const posted = await fetch(`${w.url}/store`, { method: 'POST', headers: { accept: html } });
    expect(posted.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });
});
