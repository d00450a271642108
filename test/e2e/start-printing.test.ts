import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { printDemo } from '../../src/roles.ts';
import { DEMO_PASSWORD, DEMO_PEOPLE } from '../../src/seed.ts';
import { engine, startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * `npm start`'s command (`node src/main.ts serve`, package.json) on an embedded data folder: its
 * output up to the line that says the sign-ins are printed, then SIGTERM and its exit.
 */
function npmStart(dataDir: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/main.ts', 'serve'], {
      env: {
        PATH: process.env.PATH,
        PORT: '0',
        WAYBILL_DATABASE_URL: join(dataDir, 'pglite'),
        WAYBILL_LOG_LEVEL: 'warn',
        WAYBILL_SHUTDOWN_DELAY_SECONDS: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('Demo sign-ins:')) child.kill('SIGTERM');
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      err += chunk;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (out.includes('Demo sign-ins:')) resolve(out);
      else
        reject(
          new Error(`npm start ended (${code ?? signal}) before printing the sign-ins:\n${out}\n${err}`),
        );
    });
  });
}

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

/**
 * Issue 53 item 9 with the real command: a restart on the same data folder prints what the README's
 * tour reads from the first start, the demo app's client id, redirect URI and `install (demo)` link
 * (with its code verifier) included; the secrets printed once are not printed again.
 */
describe.runIf(engine === 'pglite')('npm start, twice on one embedded data folder', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'waybill-start-'));
  });
  afterAll(() => {
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("the second start prints the demo app's client id, redirect URI and install (demo) link again", async () => {
    const first = await npmStart(dataDir);
    expect(first).toContain('Demo data created. Sign in with:');
    const clientId = /client id\s+(app_\w+)/.exec(first)?.[1] ?? '';
    expect(clientId).toMatch(/^app_\w+/);
    const secret = /client secret\s+(\S+)/.exec(first)?.[1] ?? '';
    expect(secret.length).toBeGreaterThan(10);
    expect(first).toMatch(/redirect URI\s+http:\/\/localhost:8080\/callback/);
    expect(first).toMatch(/install \(demo\)\s+http:\/\/\S+\/oauth\/authorize\?/);

    const second = await npmStart(dataDir);
    expect(second).toContain('Demo data (from an earlier start). Sign in with:');
    expect(second).not.toContain('Demo data created');
    expect(second).toMatch(new RegExp(`client id\\s+${clientId}\\b`));
    expect(second).toMatch(/redirect URI\s+http:\/\/localhost:8080\/callback/);
    expect(second).toMatch(/install link\s+http:\/\/\S+\/apps\//);
    const install = /install \(demo\)\s+(\S+)/.exec(second)?.[1] ?? '';
    const link = new URL(install);
    expect(link.pathname).toBe('/oauth/authorize');
    expect(link.searchParams.get('client_id')).toBe(clientId);
    expect(link.searchParams.get('redirect_uri')).toBe('http://localhost:8080/callback');
    expect(link.searchParams.get('code_challenge_method')).toBe('S256');
    expect(second).toMatch(/code verifier\s+[\w-]{43}/);
    // Printed once: the client secret and the test key's secret are not printed again.
    expect(second).not.toContain(secret);
    const key = /test API key\s+(sk_test_\S+)/.exec(first)?.[1] ?? '';
    expect(second).not.toContain(key);
  }, 180_000);
});
