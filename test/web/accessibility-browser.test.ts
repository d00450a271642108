import { createRequire } from 'node:module';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DAY } from '../../src/lib/clock.ts';
import { install } from '../apps/fixtures.ts';
import { drainAll } from '../delivery/support.ts';
import { authorizationRequest } from '../oauth/support.ts';
import { png } from '../store/images.ts';
import {
  listing,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signInAgain,
  signUpAs,
  startEventsReceiver,
  submit,
  submitAndDecide,
} from '../store/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  type Json,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Receiver, startReceiver } from '../webhooks/api/support.ts';
import { PASSWORD } from './page-client.ts';

/**
 * CONTRACT.md, "The dashboard's manners": no page has a serious or critical axe-core violation.
 * Each role's pages are found as a person finds them, by following the links from where they land
 * (same origin, GET only), and axe-core runs in Chromium on each (injected past the pages' CSP,
 * which refuses every script not their own). The seed makes each kind of page exist (both modes'
 * shipments, an endpoint with a failed delivery, a token, an agent, a member, an installed app, a
 * privacy request, an app with a submission, screenshots, a published app with a review), so the
 * second questions (GET pages) are reached by their links; each role also opens its error pages
 * (403 and 404 in the shell). Pages that differ only by an id are a pattern: at most
 * PER_PATTERN of each are checked, so the crawl reaches every kind of page and stays bounded.
 */
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
/** How many pages of one pattern (the same path with other ids) are checked. */
const PER_PATTERN = 2;
/** A bound, far above what a role links to: a crawl that reaches it is a failure, not a cut. */
const MAX_PAGES = 250;
const OWN = /^\/(dashboard|developer|review|store|apps|t|oauth|signin|signup)(\/|$|\?)/;
/** GETs that change what later pages show (the mode, the company) or sign out: not followed. */
const NOT_FOLLOWED = /^\/(dashboard\/switch|signout|logout)\b/;

interface Violation {
  page: string;
  rule: string;
  impact: string;
  nodes: string[];
}

interface Crawl {
  pages: Array<{ path: string; status: number }>;
  violations: Violation[];
  /** Per page: violations of each impact (minor, moderate, serious, critical), for the record. */
  counts: Record<string, Record<string, number>>;
}

/** A path with its ids (anything with a digit, or a prefixed id) as `:id`, and its query's names. */
function patternOf(path: string): string {
  const url = new URL(path, 'http://x');
  const segments = url.pathname
    .split('/')
    .map((s) => ((/\d/.test(s) && s.length >= 6) || /^[a-z]{2,5}_\w{4,}$/.test(s) ? ':id' : s));
  const names = [...new Set(url.searchParams.keys())].sort();
  return `${segments.join('/')}${names.length ? `?${names.join('&')}` : ''}`;
}

describe.skipIf(!hasChromium)('axe-core over every page of every role', () => {
  let w: TestWaybill;
  let browser: Browser;
  let receiver: Receiver;
  let company: CompanyFixture;
  let merchant: Person;
  let developer: Person;
  let reviewer: Person;
  let trackingUrl: string;
  let published: Json;
  let drafted: Json;
  let consentQuery: string;
  const visited: Record<string, number> = {};

  beforeAll(async () => {
    w = await startWaybill(reviewerEnv);
    browser = await launchChromium();
    receiver = await startReceiver();
    // Every message is refused: the endpoint's deliveries show failed attempts.
    receiver.answer = { status: 500, body: 'down for maintenance' };
    company = await createCompany(w, 'Accessible Freight');
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: receiver.url, event_types: ['shipment.created'], description: 'Order sync' },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    const shipment = await createShipment(w, company.testToken, {
      external_ref: 'order-1042',
      recipient_name: 'Ada Recipient',
      recipient_email: 'ada@example.test',
    });
    trackingUrl = shipment.tracking_url;
    // A timeline on the shipment page, so its checkpoints and form are checked too.
    const checkpoint = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
      token: company.testToken,
      body: {
        occurred_at: '2026-11-21T10:00:00Z',
        location: { city: 'Leipzig', country: 'DE' },
        message: 'Arrived at the hub',
        status: 'in_transit',
        sub_status: 'in_transit.customs',
      },
    });
    expect(checkpoint.status, checkpoint.text).toBe(201);
    const failed = async () =>
      (
        await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.body.id}/deliveries`, {
          token: company.testToken,
        })
      ).body.data as Array<{ attempt_count: number }>;
    // The fan-out makes the delivery; the test's own worker sends it (and is refused) once.
    await vi.waitFor(async () => expect(await failed()).toHaveLength(1), { timeout: 30_000, interval: 100 });
    await drainAll(w);
    expect((await failed())[0]?.attempt_count).toBeGreaterThan(0);
    await createShipment(w, company.liveToken, { external_ref: 'order-1043', recipient_name: 'Lee Live' });
    // A merchant account with a member of its own, and a shipment of it.
    const account = await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
      token: company.owner.token,
      body: { name: 'Corner Shop' },
    });
    expect(account.status, account.text).toBe(201);
    merchant = await signUpPerson(w, 'Mia Merchant');
    const joined = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: merchant.email, role: 'merchant_member', customer_account_id: account.body.id },
    });
    expect(joined.status, joined.text).toBe(201);
    // An agent connection (its revoke question), a privacy request.
    const agent = await call(w, 'POST', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
      body: { name: 'Night agent', mode: 'test', scopes: ['shipments:read'], audience: 'mcp' },
    });
    expect(agent.status, agent.text).toBe(201);
    const privacy = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'data_request', recipient: { email: 'ada@example.test' } },
    });
    expect(privacy.status, privacy.text).toBe(201);

    // The developer: one app in the store (installed, reviewed), one submitted and waiting.
    developer = await signUpPerson(w, 'App Developer');
    reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
    const events = await startEventsReceiver((m) => (m.headers['webhook-signature'] ? 200 : 400));
    published = await registerPublishable(w, developer, events.url, { name: 'Label Printer' });
    await submitAndDecide(
      w,
      developer,
      reviewer,
      published.id,
      { listing: listing(published.scopes) },
      'approved',
    );
    drafted = await registerPublishable(w, developer, events.url, { name: 'Returns Desk' });
    for (const hue of ['#3366cc', '#22aa55']) {
      const shot = await fetch(`${w.url}/v1/developer/apps/${drafted.id}/listing-media/screenshots`, {
        method: 'POST',
        headers: { authorization: `Bearer ${developer.token}`, 'content-type': 'image/png' },
        body: new Uint8Array(await png(1280, 720, hue)),
      });
      expect(shot.status).toBe(201);
    }
    const submitted = await submit(w, developer, drafted.id, { listing: listing(drafted.scopes) });
    expect(submitted.status, submitted.text).toBe(201);
    await events.close();
    await install(w, { appId: published.id, tenantId: company.tenantId, userId: company.owner.id });
    consentQuery = (
      await authorizationRequest(
        {
          clientId: drafted.client_id ?? drafted.id,
          clientSecret: null,
          redirectUri: drafted.redirect_uris[0],
          kind: 'confidential',
        },
        { scope: 'shipments:read' },
      )
    ).query.toString();
    // A review needs a week of use; sessions are signed in anew after it.
    w.clock.advance(8 * DAY);
    const owner = await signInAgain(w, company.owner);
    company = { ...company, owner };
    merchant = await signInAgain(w, merchant);
    developer = await signInAgain(w, developer);
    reviewer = await signInAgain(w, reviewer);
    const review = await call(w, 'POST', `/v1/store/apps/${published.id}/reviews`, {
      token: owner.token,
      body: { rating: 4, body: 'Prints labels quickly.' },
    });
    expect(review.status, review.text).toBe(201);
  }, 120_000);
  afterAll(async () => {
    console.log('axe crawl, pages visited per role:', JSON.stringify(visited));
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  async function signedIn(person: Person | null, width = 1280): Promise<BrowserContext> {
    const context = await browser.newContext({
      viewport: { width, height: width < 500 ? 844 : 800 },
      bypassCSP: true,
    });
    if (!person) return context;
    const page = await context.newPage();
    await page.goto(`${w.url}/signin`);
    await page.getByLabel('E-mail').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState('load');
    await page.close();
    return context;
  }

  /** Follows the role's links from its landing page (and its extra pages), axe-core on each. */
  async function crawl(context: BrowserContext, starts: string[]): Promise<Crawl> {
    const page = await context.newPage();
    const seen = new Set<string>();
    const perPattern = new Map<string, number>();
    const queue = [...starts];
    const result: Crawl = { pages: [], violations: [], counts: {} };
    while (queue.length > 0 && seen.size < MAX_PAGES) {
      const path = queue.shift() as string;
      if (seen.has(path)) continue;
      // The starts (the landing page, the error pages) are visited whatever their pattern, and
      // take no place of the pages found by links.
      const pattern = patternOf(path);
      const start = starts.includes(path);
      if (!start && (perPattern.get(pattern) ?? 0) >= PER_PATTERN) continue;
      seen.add(path);
      if (!start) perPattern.set(pattern, (perPattern.get(pattern) ?? 0) + 1);
      const response = await page.goto(`${w.url}${path}`).catch((error: Error) => {
        // A page that leads away (a redirect off this host) is a failure to list, not a crash.
        result.violations.push({ page: path, rule: 'navigation', impact: 'failed', nodes: [error.message] });
        return null;
      });
      if (!response || !(response.headers()['content-type'] ?? '').includes('text/html')) continue;
      result.pages.push({ path, status: response.status() });
      await page.addScriptTag({ path: AXE });
      const axe = (await page.evaluate(async () => {
        const run = (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe;
        return run.run();
      })) as {
        violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown[] }> }>;
      };
      const counts: Record<string, number> = {};
      for (const v of axe.violations) {
        const impact = v.impact ?? 'unknown';
        counts[impact] = (counts[impact] ?? 0) + v.nodes.length;
        if (impact === 'serious' || impact === 'critical')
          result.violations.push({
            page: path,
            rule: v.id,
            impact,
            nodes: v.nodes.map((n) => n.target.join(' ')),
          });
      }
      result.counts[path] = counts;
      const links = await page
        .locator('a[href]')
        .evaluateAll((anchors) => anchors.map((a) => (a as unknown as { href: string }).href));
      for (const href of links) {
        const url = new URL(href);
        if (url.origin !== new URL(w.url).origin) continue;
        const next = `${url.pathname}${url.search}`;
        if (!OWN.test(next) || NOT_FOLLOWED.test(next) || seen.has(next)) continue;
        queue.push(next);
      }
    }
    await page.close();
    expect(seen.size, 'the crawl reached its bound: raise MAX_PAGES or group more pages').toBeLessThan(
      MAX_PAGES,
    );
    return result;
  }

  /** Runs the crawl, prints its per-page counts by impact, and fails listing page, rule and nodes. */
  async function check(role: string, context: BrowserContext, starts: string[]): Promise<Crawl> {
    const found = await crawl(context, starts);
    visited[role] = found.pages.length;
    console.log(
      `axe ${role}: ${found.pages.length} pages\n${Object.entries(found.counts)
        .map(([path, counts]) => {
          const status = found.pages.find((p) => p.path === path)?.status;
          const line = ['critical', 'serious', 'moderate', 'minor'].map((i) => `${i} ${counts[i] ?? 0}`);
          return `  ${status} ${path}: ${line.join(', ')}`;
        })
        .join('\n')}`,
    );
    expect(found.violations, JSON.stringify(found.violations, null, 1)).toEqual([]);
    return found;
  }

  const paths = (found: Crawl) => found.pages.map((p) => p.path);
  const statusOf = (found: Crawl, path: string) => found.pages.find((p) => p.path === path)?.status;

  it('a company owner, in test mode: every page, the second questions and the error pages', async () => {
    const context = await signedIn(company.owner);
    try {
      const found = await check('owner (test mode)', context, [
        '/dashboard',
        `/apps/${drafted.client_id ?? drafted.id}/install`,
        `/oauth/authorize?${consentQuery}`,
        '/dashboard/no-such-page',
        '/dashboard/webhooks/ep_missing',
        '/dashboard/shipments/shp_missing',
      ]);
      const reached = paths(found);
      for (const kind of [
        /^\/dashboard\/shipments\/shp_/,
        /^\/dashboard\/webhooks\/we_\w+$/,
        /^\/dashboard\/webhooks\/deliveries\//,
        /^\/dashboard\/webhooks\/we_\w+\/delete$/,
        /^\/dashboard\/webhooks\/we_\w+\/rotate-secret$/,
        /^\/dashboard\/api-tokens\/[^/]+\/revoke$/,
        /^\/dashboard\/agents\/[^/]+\/revoke$/,
        /^\/dashboard\/members\/[^/]+\/remove$/,
        /^\/dashboard\/apps\/[^/]+\/uninstall$/,
        /^\/dashboard\/privacy-requests$/,
        /^\/dashboard\/store\/app_\w+(\?|$)/,
        /^\/dashboard\/store\/app_\w+\/reviews\/[^/]+\/delete\?/,
      ])
        expect(
          reached.some((p) => kind.test(p)),
          `${kind} among ${reached.join(' ')}`,
        ).toBe(true);
      expect(statusOf(found, '/dashboard/no-such-page')).toBe(404);
      expect(statusOf(found, '/dashboard/webhooks/ep_missing')).toBe(404);
    } finally {
      await context.close();
    }
  }, 600_000);

  it('a company owner, in live mode', async () => {
    const context = await signedIn(company.owner);
    try {
      const page = await context.newPage();
      await page.goto(`${w.url}/dashboard/shipments`);
      await page.getByRole('group', { name: 'Data shown' }).getByRole('link', { name: 'Live' }).click();
      await page.getByText('Lee Live').waitFor();
      await page.close();
      const found = await check('owner (live mode)', context, ['/dashboard/shipments']);
      expect(paths(found).some((p) => /^\/dashboard\/shipments\/shp_/.test(p))).toBe(true);
    } finally {
      await context.close();
    }
  }, 600_000);

  it('a merchant-account member, with the pages their role refuses (403 in the shell)', async () => {
    const context = await signedIn(merchant);
    try {
      const found = await check('merchant member', context, ['/dashboard', '/dashboard/apps']);
      expect(statusOf(found, '/dashboard/apps')).toBe(403);
      expect(paths(found).length).toBeGreaterThan(2);
    } finally {
      await context.close();
    }
  }, 600_000);

  it('an app developer: the portal, its second questions, and the console they may not open', async () => {
    const context = await signedIn(developer);
    try {
      const found = await check('app developer', context, [
        '/developer/apps',
        '/review',
        '/developer/apps/app_nope',
      ]);
      const reached = paths(found);
      for (const kind of [
        /^\/developer\/apps\/app_\w+\/submissions$/,
        /^\/developer\/apps\/app_\w+\/listing-media$/,
        /^\/developer\/apps\/app_\w+\/listing-media\/screenshots\/[^/]+\/delete$/,
        /^\/developer\/apps\/app_\w+\/client-secret\/rotate$/,
        /^\/developer\/apps\/app_\w+\/unpublish$/,
      ])
        expect(
          reached.some((p) => kind.test(p)),
          `${kind} among ${reached.join(' ')}`,
        ).toBe(true);
      expect(statusOf(found, '/review')).toBe(403);
      expect(statusOf(found, '/developer/apps/app_nope')).toBe(404);
    } finally {
      await context.close();
    }
  }, 600_000);

  it('a reviewer: the queue, a submission, the suspend and delist questions', async () => {
    const context = await signedIn(reviewer);
    try {
      const found = await check('reviewer', context, ['/review', '/review/submissions/sub_missing']);
      const reached = paths(found);
      for (const kind of [/^\/review\/submissions\/sub_\w+$/, /^\/review\/apps\/app_\w+\/suspend\?/])
        expect(
          reached.some((p) => kind.test(p)),
          `${kind} among ${reached.join(' ')}`,
        ).toBe(true);
      expect(statusOf(found, '/review/submissions/sub_missing')).toBe(404);
    } finally {
      await context.close();
    }
  }, 600_000);

  it('signed out: the public tracking page at 390 px, sign-in and sign-up', async () => {
    const context = await signedIn(null, 390);
    try {
      const found = await check('signed out', context, [new URL(trackingUrl).pathname, '/signin', '/signup']);
      expect(statusOf(found, new URL(trackingUrl).pathname)).toBe(200);
    } finally {
      await context.close();
    }
  }, 300_000);
});
