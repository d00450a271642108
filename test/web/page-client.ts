import { expect } from 'vitest';
import { verificationLink } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';

export interface PageResponse {
  status: number;
  location: string | null;
  headers: Headers;
  text: string;
}

export const PASSWORD = 'correct horse battery';

/**
 * A person's browser without a browser: real HTTP to the listening server, a cookie jar, no
 * redirects followed (tests look at each one), and the CSRF token of the last page it read.
 */
export class PageClient {
  readonly cookies = new Map<string, string>();
  csrf = '';
  private readonly base: string;

  constructor(w: TestWaybill) {
    this.base = w.url;
  }

  async request(method: 'GET' | 'POST', path: string, form?: Record<string, string | string[]>) {
    const headers: Record<string, string> = {
      cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
    };
    let body: string | undefined;
    if (form) {
      const params = new URLSearchParams();
      for (const [key, value] of Object.entries(form)) {
        for (const one of Array.isArray(value) ? value : [value]) params.append(key, one);
      }
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
    }
    const response = await fetch(new URL(path, this.base), { method, headers, body, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const name = pair.slice(0, pair.indexOf('='));
      const expired = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a));
      if (expired) this.cookies.delete(name);
      else this.cookies.set(name, pair.slice(pair.indexOf('=') + 1));
    }
    const text = await response.text();
    const csrf = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (csrf) this.csrf = csrf;
    return {
      status: response.status,
      location: response.headers.get('location'),
      headers: response.headers,
      text,
    };
  }

  get(path: string): Promise<PageResponse> {
    return this.request('GET', path);
  }

  /** Posts a form with the CSRF token of the last page read (as a browser would). */
  post(path: string, form: Record<string, string | string[]>): Promise<PageResponse> {
    return this.request('POST', path, { _csrf: this.csrf, ...form });
  }

  /** Follows a 303 from a form post and answers the page it lands on. */
  async follow(response: PageResponse): Promise<PageResponse> {
    expect(response.status, response.text.slice(0, 500)).toBe(303);
    return this.get(response.location ?? '/');
  }
}

/** A new person signed up and signed in through the pages. */
export async function signUpInBrowser(w: TestWaybill, name = 'Page Person') {
  const client = new PageClient(w);
  const email = `${name.toLowerCase().replaceAll(/\W/g, '')}-${crypto.randomUUID()}@example.test`;
  await client.get('/signup');
  const signedUp = await client.post('/signup', { name, email, password: PASSWORD, return_to: '/dashboard' });
  expect(signedUp.status).toBe(303);
  // The person opens the link mailed to them and presses its button.
  const link = new URL(await verificationLink(w, email));
  expect((await client.get(`${link.pathname}${link.search}`)).status).toBe(200);
  const verified = await client.post('/verify-email', { token: link.searchParams.get('token') ?? '' });
  expect(verified.status, verified.text.slice(0, 300)).toBe(200);
  // ... and goes on to the dashboard, which (without a company yet) offers to create one.
  expect((await client.get('/dashboard/companies/new')).status).toBe(200);
  return { client, email };
}

/** An existing person (e.g. from the API fixtures, which use PASSWORD) signs in through the page. */
export async function signInInBrowser(w: TestWaybill, email: string) {
  const client = new PageClient(w);
  await client.get('/signin');
  const signedIn = await client.post('/signin', { email, password: PASSWORD, return_to: '/dashboard' });
  expect(signedIn.status).toBe(303);
  return client;
}

/** The shipment ids linked from a page, in order. */
export function shipmentIds(page: string): string[] {
  return [...page.matchAll(/href="\/dashboard\/shipments\/(shp_[A-Za-z0-9]+)"/g)].map((m) => m[1] ?? '');
}

/** A Chromium context and page signed in through the sign-in form, landed on the dashboard. */
export async function signInChromium(
  browser: import('playwright-core').Browser,
  w: TestWaybill,
  email: string,
  options: import('playwright-core').BrowserContextOptions = {},
) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
  const page = await context.newPage();
  await page.goto(`${w.url}/signin`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(/\/dashboard\//);
  return { context, page };
}
