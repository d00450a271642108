import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { printDemo } from '../../src/roles.ts';
import { DEMO_PASSWORD, DEMO_PEOPLE } from '../../src/seed.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * Issue 53 item 9: `npm start` prints the demo's sign-ins on every start, not only the first; the
 * test key's secret only on the first (Waybill keeps its hash), with where to make another. And
 * the favicon the shell links is an SVG the app serves, cached.
 */
describe('what a start prints, and the favicon', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await w?.close();
  });

  const printed = async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    await printDemo(w.ctx);
    const text = log.mock.calls.map((c) => c.join(' ')).join('\n');
    log.mockRestore();
    return text;
  };

  it('the first start seeds and prints the sign-ins and the key; a restart prints them again, the key by its hint', async () => {
    const first = await printed();
    expect(first).toContain('Demo data created. Sign in with:');
    const key = /test API key\s+(sk_test_\S+)/.exec(first)?.[1] ?? '';
    expect(key).toMatch(/^sk_test_\w{20,}/);

    for (const start of [2, 3]) {
      const again = await printed();
      expect(again, `start ${start}`).toContain('Demo data (from an earlier start). Sign in with:');
      for (const person of Object.values(DEMO_PEOPLE)) expect(again).toContain(person.email);
      expect(again).toContain(DEMO_PASSWORD);
      expect(again).toContain(`${key.slice(0, 12)}`);
      expect(again).not.toContain(key);
      expect(again).toContain('/dashboard/api-tokens');
      expect(again).toContain('/mcp');
    }
  });

  it('serves the favicon as SVG with a cache header; the shell links it; /favicon.ico is sent there', async () => {
    const icon = await fetch(`${w.url}/static/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.headers.get('cache-control')).toBe('public, max-age=86400');
    expect(await icon.text()).toMatch(/^<svg [^>]*><title>Waybill<\/title>/);
    const ico = await fetch(`${w.url}/favicon.ico`, { redirect: 'manual' });
    expect(ico.status).toBe(301);
    expect(ico.headers.get('location')).toBe('/static/favicon.svg');
    const page = await (await fetch(`${w.url}/signin`)).text();
    expect(page).toContain('<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">');
  });
});
