import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany, signUpPerson } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PASSWORD, PageClient, signInInBrowser } from './page-client.ts';

/**
 * Targets that string checks took for same-site paths but a browser reads as another host
 * (tabs and newlines dropped, `\` read as `/`, dot segments collapsing into `//`), and plain
 * foreign ones. Each is the decoded value; the tests percent-encode it into the query.
 */
const OFFSITE = [
  '/\t/evil.example',
  '/\n/evil.example',
  '/\r\n/evil.example',
  '//evil.example',
  '/\\evil.example',
  '\\\\evil.example',
  '/\\/evil.example',
  '/.//evil.example',
  '/..//evil.example',
  '/dashboard/..//evil.example',
  'https://evil.example',
  'https:evil.example',
  'http://localhost@evil.example',
  ' //evil.example',
  'javascript:alert(1)',
  'data:text/html,hi',
];

describe('return_to stays on the site', () => {
  let w: TestWaybill;
  let email: string;
  beforeAll(async () => {
    w = await startWaybill();
    email = (await createCompany(w, 'Homebound')).owner.email;
  });
  afterAll(async () => {
    await w?.close();
  });

  /** Never another origin: a redirect to the dashboard, or a target with control characters refused (400). */
  function staysOnSite(page: { status: number; location?: string | null }, target: string): void {
    if ([...target].some((c) => c.charCodeAt(0) < 0x20)) {
      expect([302, 303, 400], JSON.stringify(target)).toContain(page.status);
      if (page.status === 400) return;
    } else expect([302, 303], JSON.stringify(target)).toContain(page.status);
    expect(page.location, JSON.stringify(target)).toBe('/dashboard');
  }

  it('sends a signed-in person at /signin to the dashboard instead of another origin', async () => {
    const client = await signInInBrowser(w, email);
    for (const target of OFFSITE) {
      const page = await client.get(`/signin?return_to=${encodeURIComponent(target)}`);
      staysOnSite(page, target);
    }
  });

  it('sends a person who signs in through the form to the dashboard instead of another origin', {
    timeout: 120_000,
  }, async () => {
    // Each sign-in runs the slow password hash: the form gets a few of each kind, /signin above all.
    const person = await signUpPerson(w, 'Form Person');
    const client = new PageClient(w);
    for (const target of [
      '/\t/evil.example',
      '//evil.example',
      '/\\evil.example',
      '/.//evil.example',
      'https://evil.example',
    ]) {
      await client.get('/signin');
      const signedIn = await client.post('/signin', {
        email: person.email,
        password: PASSWORD,
        return_to: target,
      });
      staysOnSite(signedIn, target);
    }
  });

  it('keeps the view switcher on the site', async () => {
    const company = await createCompany(w, 'Switchback');
    const client = await signInInBrowser(w, company.owner.email);
    for (const target of OFFSITE) {
      const page = await client.get(
        `/dashboard/switch?tenant=${company.tenantId}&mode=test&return_to=${encodeURIComponent(target)}`,
      );
      staysOnSite(page, target);
    }
  });

  it('percent-encodes what it keeps, so a control character never reaches the Location header', async () => {
    const client = await signInInBrowser(w, email);
    // A raw control character is refused at the door (400), before any redirect is built.
    const newline = await client.get(`/signin?return_to=${encodeURIComponent('/dash\nboard/x')}`);
    expect(newline.status).toBe(400);
    expect(newline.location).toBeFalsy();
    const encoded = await client.get('/signin?return_to=/%250a/x');
    expect(encoded.location).toBe('/%0a/x');
    const spaced = await client.get(`/signin?return_to=${encodeURIComponent('/dashboard/shipments?q=a b')}`);
    expect(spaced.location).toBe('/dashboard/shipments?q=a%20b');
  });

  it('still returns to a page of the site with its query and fragment', async () => {
    const client = await signInInBrowser(w, email);
    const target = '/dashboard/shipments?status=draft#list';
    expect((await client.get(`/signin?return_to=${encodeURIComponent(target)}`)).location).toBe(target);
    expect((await client.get(`/signin?return_to=${encodeURIComponent(`${w.url}${target}`)}`)).location).toBe(
      target,
    );
    const signedIn = await client.post('/signin', {
      email,
      password: PASSWORD,
      return_to: '/dashboard/../dashboard/events',
    });
    expect(signedIn.location).toBe('/dashboard/events');
  });
});

describe.skipIf(!hasChromium)('return_to in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let email: string;
  beforeAll(async () => {
    w = await startWaybill();
    email = (await createCompany(w, 'Chromium Homebound')).owner.email;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  it('lands a person on the site, never on evil.example, whichever way the target is spelled', async () => {
    const context = await browser.newContext();
    // The network is closed, so reaching the foreign site shows as a request for it (which then
    // fails to resolve): every request the browser makes, redirects included, is watched.
    const reachedEvil: string[] = [];
    context.on('request', (request) => {
      if (new URL(request.url()).hostname.endsWith('evil.example')) reachedEvil.push(request.url());
    });
    const page = await context.newPage();
    const home = new URL(w.url).origin;
    const landed = () => new URL(page.url());

    // A raw control character in the target is refused at the door: no form, no redirect.
    const refused = await page.goto(`${w.url}/signin?return_to=/%09/evil.example`);
    expect(refused?.status()).toBe(400);
    // Signing in through the form with a hostile target.
    await page.goto(`${w.url}/signin?return_to=/%5C/evil.example`);
    await page.getByLabel('E-mail').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // (Chromium's CSP form-action also stops a form's redirect to another origin: the sign-in
    // then never completes, which fails here too.)
    await expect.poll(() => landed().pathname).toMatch(/^\/dashboard/);
    expect(reachedEvil).toEqual([]);
    expect(landed().origin).toBe(home);
    expect(landed().pathname).toMatch(/^\/dashboard/);

    // Already signed in: /signin sends the person straight on.
    for (const query of [
      '//evil.example',
      '/%5Cevil.example',
      'https://evil.example',
      '/.//evil.example',
      '/%0a/evil.example',
      '/%0d%0a/evil.example',
    ]) {
      await page.goto(`${w.url}/signin?return_to=${query}`).catch(() => undefined);
      expect(reachedEvil, query).toEqual([]);
      expect(landed().origin, query).toBe(home);
      // Control characters are refused on /signin itself (400); the others land on the dashboard.
      expect(landed().pathname, query).toMatch(
        query.includes('%0') ? /^\/(signin|dashboard)/ : /^\/dashboard/,
      );
    }
    await context.close();
  });
});
