import { createRequire } from 'node:module';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp } from '../apps/fixtures.ts';
import { REVIEWERS, reviewerEnv, signUpAs } from '../store/support.ts';
import { call, createCompany, createShipment, type Person, signUpPerson } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Receiver, startReceiver } from '../webhooks/api/support.ts';
import { PASSWORD } from './page-client.ts';

/**
 * CONTRACT.md, "The dashboard's manners": no page has a serious or critical axe-core violation.
 * Each role's pages are found as a person finds them, by following the links from where they land
 * (same origin, GET only), and axe-core runs in Chromium on each (injected past the pages' CSP,
 * which refuses every script not their own); the public tracking page too.
 */
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
/** Enough to reach every page a role links to, few enough for a test. */
const MAX_PAGES = 60;
const OWN = /^\/(dashboard|developer|review|store|apps|t)(\/|$|\?)/;

interface Violation {
  page: string;
  rule: string;
  impact: string;
  nodes: number;
}

describe.skipIf(!hasChromium)('axe-core over every page of every role', () => {
  let w: TestWaybill;
  let browser: Browser;
  let receiver: Receiver;
  let owner: Person;
  let developer: Person;
  let reviewer: Person;
  let trackingUrl: string;

  beforeAll(async () => {
    w = await startWaybill(reviewerEnv);
    browser = await launchChromium();
    receiver = await startReceiver();
    const company = await createCompany(w, 'Accessible Freight');
    owner = company.owner;
    const shipment = await createShipment(w, company.testToken, { external_ref: 'order-1042' });
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
    await createShipment(w, company.liveToken, { external_ref: 'order-1043' });
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    developer = await signUpPerson(w, 'App Developer');
    await registerApp(w, developer);
    reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  async function signedIn(person: Person): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${w.url}/signin`);
    await page.getByLabel('E-mail').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForLoadState('load');
    await page.close();
    return context;
  }

  /** Follows the role's links from its landing page and runs axe-core on each page found. */
  async function crawl(
    context: BrowserContext,
    start: string,
  ): Promise<{ pages: string[]; violations: Violation[] }> {
    const page = await context.newPage();
    const seen = new Set<string>();
    const queue = [start];
    const violations: Violation[] = [];
    while (queue.length > 0 && seen.size < MAX_PAGES) {
      const path = queue.shift() as string;
      if (seen.has(path)) continue;
      seen.add(path);
      const response = await page.goto(`${w.url}${path}`);
      if (!response || !(response.headers()['content-type'] ?? '').includes('text/html')) continue;
      await page.addScriptTag({ path: AXE });
      const result = (await page.evaluate(async () => {
        const axe = (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe;
        return axe.run();
      })) as { violations: Array<{ id: string; impact: string | null; nodes: unknown[] }> };
      for (const v of result.violations) {
        if (v.impact === 'serious' || v.impact === 'critical')
          violations.push({ page: path, rule: v.id, impact: v.impact, nodes: v.nodes.length });
      }
      const links = await page
        .locator('a[href]')
        .evaluateAll((anchors) => anchors.map((a) => (a as unknown as { href: string }).href));
      for (const href of links) {
        const url = new URL(href);
        if (url.origin !== new URL(w.url).origin) continue;
        const next = `${url.pathname}${url.search}`;
        if (!OWN.test(next) || seen.has(next) || /signout|logout/.test(next)) continue;
        queue.push(next);
      }
    }
    await page.close();
    return { pages: [...seen], violations };
  }

  it.each([
    ['a company owner', () => owner, '/dashboard'],
    ['an app developer', () => developer, '/developer/apps'],
    ['a reviewer', () => reviewer, '/review'],
  ])(
    '%s: no serious or critical violation on any page reached',
    async (_role, who, start) => {
      const context = await signedIn(who());
      try {
        const { pages, violations } = await crawl(context, start);
        expect(pages.length).toBeGreaterThan(2);
        // The owner's crawl reaches a shipment page, with its timeline and checkpoint form.
        if (start === '/dashboard')
          expect(pages.some((p) => /^\/dashboard\/shipments\/shp_/.test(p))).toBe(true);
        expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
      } finally {
        await context.close();
      }
    },
    300_000,
  );

  it('the public tracking page, signed out, at 390 px', async () => {
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    try {
      const path = new URL(trackingUrl).pathname;
      const { violations } = await crawl(context, path);
      expect(violations, JSON.stringify(violations, null, 1)).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
