import { createRequire } from 'node:module';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Receiver, startReceiver } from '../webhooks/api/support.ts';
import { signInChromium } from './page-client.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

/**
 * Issue 53: the pages this round changed (times, field errors, copy buttons, the agent question,
 * the chart's axes and table twin) at 1280 and 390 px: no serious or critical axe-core
 * violation, no horizontal scroll at 390; screenshots in /tmp/shots for a person to look at.
 */
describe.skipIf(!hasChromium)("this round's pages at 1280 and 390 px", () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let receiver: Receiver;
  const paths: Record<string, string> = {};

  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    receiver = await startReceiver();
    company = await createCompany(w, 'Screens Freight');
    const shipment = await createShipment(w, company.testToken, { external_ref: 'order-5' });
    await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
      token: company.testToken,
      body: { occurred_at: '2026-11-21T10:00:00Z', message: 'Left the depot', status: 'in_transit' },
    });
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(endpoint.status, endpoint.text).toBe(201);
    await call(w, 'POST', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
      body: { name: 'Night agent', mode: 'test', scopes: ['shipments:read'], audience: 'mcp' },
    });
    const agents = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token: company.owner.token,
    });
    Object.assign(paths, {
      shipment: `/dashboard/shipments/${shipment.id}`,
      endpoint: `/dashboard/webhooks/${endpoint.body.id}`,
      tokens: '/dashboard/api-tokens',
      agents: '/dashboard/agents',
      'agent-question': `/dashboard/agents/${agents.body.data[0].id}/revoke`,
      inbound: '/dashboard/inbound',
    });
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await w?.close();
  });

  for (const width of [1280, 390]) {
    it(`${width} px: no serious axe-core violation, no horizontal scroll`, async () => {
      const { context, page } = await signInChromium(browser, w, company.owner.email, {
        viewport: { width, height: 900 },
        bypassCSP: true,
      });
      const found: string[] = [];
      for (const [name, path] of Object.entries(paths)) {
        await page.goto(`${w.url}${path}`);
        await page.waitForLoadState('load');
        await page.screenshot({ path: `/tmp/shots/${name}-${width}.png`, fullPage: true });
        await page.addScriptTag({ path: AXE });
        const result = (await page.evaluate(async () => {
          const axe = (globalThis as unknown as { axe: { run(): Promise<unknown> } }).axe;
          return axe.run();
        })) as { violations: Array<{ id: string; impact: string | null }> };
        for (const v of result.violations)
          if (v.impact === 'serious' || v.impact === 'critical') found.push(`${path}: ${v.id} (${v.impact})`);
        if (width === 390) {
          const scrolls = await page.evaluate(
            'document.documentElement.scrollWidth > document.documentElement.clientWidth',
          );
          if (scrolls) found.push(`${path}: scrolls sideways at 390 px`);
        }
      }
      await context.close();
      expect(found).toEqual([]);
    });
  }
});
