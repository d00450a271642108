import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInChromium } from './page-client.ts';

/**
 * Issue 53 items 3 and 5: disconnecting an agent asks once more (the first click changes nothing,
 * checked through the API); what is shown once has a copy button, and stays selectable text.
 */
describe.skipIf(!hasChromium)('agents and copy buttons in Chromium', () => {
  let w: TestWaybill;
  let browser: Browser;
  let company: CompanyFixture;
  let page: Page;
  let agentTokenId: string;

  const agents = async () => {
    const answer = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token: company.owner.token,
    });
    expect(answer.status, answer.text).toBe(200);
    return answer.body.data as Array<{ id: string; client_name: string }>;
  };

  beforeAll(async () => {
    w = await startWaybill();
    browser = await launchChromium();
    company = await createCompany(w, 'Agent Freight');
    const token = await call(w, 'POST', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
      body: { name: 'Night agent', mode: 'test', scopes: ['shipments:read'], audience: 'mcp' },
    });
    expect(token.status, token.text).toBe(201);
    agentTokenId = token.body.id;
    const signed = await signInChromium(browser, w, company.owner.email);
    await signed.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: w.url });
    page = signed.page;
  });
  afterAll(async () => {
    await browser?.close();
    await w?.close();
  });

  it('the first click on Revoke asks and changes nothing; confirming disconnects', async () => {
    expect((await agents()).map((a) => a.id)).toContain(agentTokenId);
    await page.goto(`${w.url}/dashboard/agents`);
    await page.getByRole('link', { name: 'Revoke Night agent' }).click();
    await page.getByRole('heading', { name: 'Disconnect Night agent?' }).waitFor();
    expect((await agents()).map((a) => a.id)).toContain(agentTokenId);
    await page.screenshot({ path: '/tmp/shots/agent-revoke-question-1280.png', fullPage: true });
    // A POST without the question's answer is sent to the question, and changes nothing.
    const unconfirmed = await page.request.post(`${w.url}/dashboard/agents/${agentTokenId}/revoke`, {
      form: { _csrf: (await page.locator('input[name="_csrf"]').first().inputValue()) ?? '' },
      maxRedirects: 0,
    });
    expect(unconfirmed.status()).toBe(303);
    expect((await agents()).map((a) => a.id)).toContain(agentTokenId);
    await page.getByRole('button', { name: 'Disconnect agent' }).click();
    await page.getByText('The agent was disconnected.').waitFor();
    expect((await agents()).map((a) => a.id)).not.toContain(agentTokenId);
  });

  it('a new API token is shown once with a copy button that copies it', async () => {
    await page.goto(`${w.url}/dashboard/api-tokens`);
    await page.getByLabel('Name').fill('Copy me');
    await page.getByRole('checkbox', { name: /shipments:read/ }).check();
    await page.getByRole('button', { name: 'Create token' }).click();
    const field = page.getByLabel('API token', { exact: true });
    const secret = await field.inputValue();
    expect(secret).toMatch(/^sk_test_/);
    await page.getByRole('button', { name: 'Copy API token' }).click();
    await page.getByText('Copied').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await page.screenshot({ path: '/tmp/shots/token-copy-1280.png' });
  });

  it('without script the shipment id and tracking link stay selectable text', async () => {
    const shipment = { body: await createShipment(w, company.testToken, { external_ref: 'o-1' }) };
    const { context, page: plain } = await signInChromium(browser, w, company.owner.email, {
      javaScriptEnabled: false,
    });
    await plain.goto(`${w.url}/dashboard/shipments/${shipment.body.id}`);
    expect(await plain.locator('[data-copy]').first().textContent()).toBe(shipment.body.id);
    expect(await plain.getByRole('button', { name: /^Copy/ }).count()).toBe(0);
    const select = await plain.evaluate("getComputedStyle(document.querySelector('[data-copy]')).userSelect");
    expect(select).toBe('all');
    await context.close();
  });
});
