import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDestination } from '../../src/delivery/destinations/spec.ts';
import { registerApp } from '../apps/fixtures.ts';
import { WebClient } from '../apps/web-client.ts';
import { call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * `waybill login` and `waybill app ...` as a developer runs them: the real command as a child
 * process against a running Waybill, reading a waybill.app.toml from a folder of its own.
 */

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;
// Each test starts the real `waybill` command several times (a Node process each, 2 to 4 s when the
// machine's two cores are busy): more than the suite's 30 s a test.
vi.setConfig({ testTimeout: 120_000 });
const PASSWORD = 'correct horse battery';

let w: TestWaybill;
let developer: Person;
let home: string;

beforeAll(async () => {
  w = await startWaybill();
  developer = await signUpPerson(w, 'CLI Developer');
  home = mkdtempSync(join(tmpdir(), 'waybill-cli-'));
});
afterAll(async () => {
  await w?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(
  args: string[],
  options: { input?: string; env?: Record<string, string> } = {},
): Promise<Result> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    cwd: home,
    env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, 'config'), ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  child.stdin.end(options.input ?? '');
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

function writeConfig(name: string, text: string): string {
  writeFileSync(join(home, name), text);
  return name;
}

function toml(appId: string, extra = ''): string {
  return `# Carrier Sync, as code
app_id = "${appId}"
name = "Carrier Sync"
description = "Keeps your carrier accounts in step with Waybill"
homepage_url = "https://carrier-sync.example"
privacy_url = "https://carrier-sync.example/privacy"
support_url = "https://carrier-sync.example/support"
redirect_uris = ["https://carrier-sync.example/oauth/callback", "http://localhost:8080/callback"]
scopes = ["shipments:read", "webhooks:write"]
${extra}`;
}

const SUBSCRIPTION = `
[[subscriptions]]
event_types = ["shipment.status_changed"]
url = "https://carrier-sync.example/waybill"

[subscriptions.filter]
"data.shipment.status" = { in = ["delivered", "exception"] }
`;

const versionsOf = async (appId: string): Promise<Json[]> =>
  (await call(w, 'GET', `/v1/developer/apps/${appId}/versions`, { token: developer.token })).body.data;

describe('waybill login', () => {
  it('asks for e-mail and password and keeps the session token in a 0600 file', async () => {
    // A folder that was there, open to others, is tightened to 0700 (review finding I5).
    mkdirSync(join(home, 'config', 'waybill'), { recursive: true, mode: 0o755 });
    chmodSync(join(home, 'config', 'waybill'), 0o755);
    const refused = await run(['login', '--api', w.url], { input: `${developer.email}\nwrong password\n` });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/Sign-in refused: 401/);

    const result = await run(['login', '--api', w.url], { input: `${developer.email}\n${PASSWORD}\n` });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`Signed in to ${w.url} as ${developer.email}`);
    const file = join(home, 'config', 'waybill', 'credentials.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'config', 'waybill')).mode & 0o777).toBe(0o700);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored.api).toBe(w.url);
    expect(stored.token).toMatch(/^ust_/);
    // The stored token is a working session: the app commands use it without WAYBILL_TOKEN.
    const app = await registerApp(w, developer);
    const versions = await run(['app', 'versions', '--app', app.id]);
    expect(versions.code).toBe(0);
    expect(versions.stdout).toMatch(/^\s+1 {2}active/m);
  });
});

describe('the stored session stays with the API it was made for', () => {
  /** Another origin on this machine that answers like Waybill and records what it was sent. */
  let other: Server;
  let otherUrl: string;
  const received: Array<string | undefined> = [];
  beforeAll(async () => {
    other = createServer((request, response) => {
      received.push(request.headers.authorization);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ data: [], next_cursor: null }));
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => other?.close(() => resolve())));

  it('L1: an app_id that is not an app id is refused before any request, whatever it points at', async () => {
    const before = received.length;
    for (const hostile of ['../../companies/x', 'app_x/../../../v1/companies', 'app_x?y=1', 'app_%2e%2e']) {
      writeConfig('hostile.app.toml', toml(hostile));
      const deploy = await run(['app', 'deploy', '--config', 'hostile.app.toml', '--api', otherUrl], {
        env: { WAYBILL_TOKEN: 'ust_hostile', WAYBILL_API_URL: otherUrl },
      });
      expect(deploy.code, hostile).toBe(2);
      expect(deploy.stderr).toContain('is not an app id');
      const versions = await run(['app', 'versions', '--app', hostile, '--api', otherUrl], {
        env: { WAYBILL_TOKEN: 'ust_hostile', WAYBILL_API_URL: otherUrl },
      });
      expect(versions.code).toBe(2);
    }
    expect(received.length).toBe(before);
  });

  it('is never sent to another origin, named by --api or WAYBILL_API_URL', async () => {
    const env = { XDG_CONFIG_HOME: join(home, 'origin') };
    const login = await run(['login', '--api', w.url], { input: `${developer.email}\n${PASSWORD}\n`, env });
    expect(login.code).toBe(0);
    const app = await registerApp(w, developer);

    const elsewhere = await run(['app', 'versions', '--app', app.id, '--api', otherUrl], { env });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain(`The stored session was made for ${w.url}, not ${otherUrl}`);
    expect(elsewhere.stderr).toContain(`waybill login --api ${otherUrl}`);
    const byVariable = await run(['app', 'versions', '--app', app.id], {
      env: { ...env, WAYBILL_API_URL: `${otherUrl}/` },
    });
    expect(byVariable.code).toBe(1);
    expect(byVariable.stderr).toContain(`waybill login --api ${otherUrl}`);
    writeConfig('elsewhere.app.toml', toml(app.id));
    const deploy = await run(['app', 'deploy', '--config', 'elsewhere.app.toml', '--api', otherUrl], { env });
    expect(deploy.code).toBe(1);
    expect(received).toEqual([]);

    // Its own origin, named or not, still gets it.
    const own = await run(['app', 'versions', '--app', app.id, '--api', `${w.url}/`], { env });
    expect(own.stderr).toBe('');
    expect(own.code).toBe(0);
    expect(own.stdout).toMatch(/^\s+1 {2}active/m);

    // WAYBILL_TOKEN goes only to WAYBILL_API_URL's origin (finding I5): --api naming another is refused.
    const unbound = await run(['app', 'versions', '--app', app.id, '--api', otherUrl], {
      env: { ...env, WAYBILL_TOKEN: 'ust_chosen' },
    });
    expect(unbound.code).toBe(1);
    expect(unbound.stderr).toContain(
      `WAYBILL_TOKEN is for http://localhost:3000 (WAYBILL_API_URL), not ${otherUrl}`,
    );
    const elsewhereByVariable = await run(['app', 'versions', '--app', app.id, '--api', otherUrl], {
      env: { ...env, WAYBILL_TOKEN: 'ust_chosen', WAYBILL_API_URL: w.url },
    });
    expect(elsewhereByVariable.code).toBe(1);
    expect(received).toEqual([]);
    const chosen = await run(['app', 'versions', '--app', app.id], {
      env: { ...env, WAYBILL_TOKEN: 'ust_chosen', WAYBILL_API_URL: otherUrl },
    });
    expect(chosen.code).toBe(0);
    expect(received).toEqual(['Bearer ust_chosen']);
  });

  it('plain http only to this machine: login and every command refuse it for another host', async () => {
    const env = { XDG_CONFIG_HOME: join(home, 'plain') };
    const login = await run(['login', '--api', 'http://waybill.example'], {
      input: `${developer.email}\n${PASSWORD}\n`,
      env,
    });
    expect(login.code).toBe(2);
    expect(login.stderr).toContain('--api must use https:// for waybill.example');
    expect(login.stdout).not.toContain('Password');

    const withToken = { ...env, WAYBILL_TOKEN: developer.token };
    for (const args of [
      ['app', 'versions', '--app', 'app_x', '--api', 'http://10.0.0.7:3000'],
      ['app', 'release', '1', '--app', 'app_x', '--api', 'http://waybill.example'],
    ]) {
      const refused = await run(args, { env: withToken });
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/--api must use https:\/\/ for (10\.0\.0\.7:3000|waybill\.example)/);
    }
    const byVariable = await run(['app', 'versions', '--app', 'app_x'], {
      env: { ...withToken, WAYBILL_API_URL: 'http://waybill.example' },
    });
    expect(byVariable.code).toBe(2);
    expect(byVariable.stderr).toContain('WAYBILL_API_URL must use https://');
    const listen = await run(
      ['listen', '--api', 'http://waybill.example', '--forward-to', 'http://127.0.0.1:1/'],
      {
        env: { ...env, WAYBILL_API_KEY: 'sk_test_x' },
      },
    );
    expect(listen.code).toBe(2);
    expect(listen.stderr).toContain('--api must use https:// for waybill.example');
  });
});

describe('waybill app', () => {
  it('deploy prints the changes and the number; --release makes it active; release N rolls back', async () => {
    const app = await registerApp(w, developer);
    const env = { WAYBILL_TOKEN: developer.token, WAYBILL_API_URL: w.url };
    const file = writeConfig('waybill.app.toml', toml(app.id, SUBSCRIPTION));
    const deployed = await run(['app', 'deploy', '--api', w.url, '--message', 'Subscribe'], { env });
    expect(deployed.stderr).toBe('');
    expect(deployed.code).toBe(0);
    expect(deployed.stdout).toContain('Created version 2');
    expect(deployed.stdout).toContain('draft');
    expect(deployed.stdout).toContain('+ subscriptions[0].event_types = ["shipment.status_changed"]');
    expect(deployed.stdout).toContain(
      '+ subscriptions[0].filter = {"data.shipment.status":{"in":["delivered","exception"]}}',
    );
    expect(deployed.stdout).toContain('waybill app release 2');
    expect((await versionsOf(app.id))[0]).toMatchObject({ number: 2, status: 'draft', message: 'Subscribe' });

    writeConfig(file, toml(app.id, SUBSCRIPTION).replace('name = "Carrier Sync"', 'name = "Carrier Sync 3"'));
    const released = await run(['app', 'deploy', '--api', w.url, '--release'], { env });
    expect(released.code).toBe(0);
    expect(released.stdout).toContain('Created version 3');
    expect(released.stdout).toContain('~ name: "Carrier Sync" -> "Carrier Sync 3"');
    expect(released.stdout).toContain('Released version 3: it is active');
    const app3 = await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token });
    expect(app3.body.name).toBe('Carrier Sync 3');

    const listed = await run(['app', 'versions', '--api', w.url], { env });
    expect(listed.code).toBe(0);
    expect(
      listed.stdout
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s+/).slice(0, 2)),
    ).toEqual([
      ['3', 'active'],
      ['2', 'draft'],
      ['1', 'superseded'],
    ]);

    const rollback = await run(['app', 'release', '1', '--api', w.url], { env });
    expect(rollback.code).toBe(0);
    expect(rollback.stdout).toContain('Released version 1');
    const app1 = await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token });
    expect(app1.body.name).toBe('Carrier Sync');
    const missing = await run(['app', 'release', '9', '--api', w.url], { env });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no version 9');
  });

  it('each error is printed with its path in the file, and nothing is stored', async () => {
    const app = await registerApp(w, developer);
    const env = { WAYBILL_TOKEN: developer.token, WAYBILL_API_URL: w.url };
    const deploy = (text: string) => {
      writeConfig('bad.app.toml', text);
      return run(['app', 'deploy', '--config', 'bad.app.toml', '--api', w.url], { env });
    };
    const malformed = await deploy(`${toml(app.id)}\nscopes = ["again"]\n`);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/^bad\.app\.toml:\d+:\d+: /);

    const unterminated = await deploy(`${toml(app.id)}\nevents_url = "https://x.example\n`);
    expect(unterminated.code).toBe(1);
    expect(unterminated.stderr).toMatch(/^bad\.app\.toml:11:\d+: /);

    const unknownField = await deploy(toml(app.id, `colour = "blue"\n${SUBSCRIPTION}`));
    expect(unknownField.code).toBe(1);
    expect(unknownField.stderr).toContain('Refused: 422 validation.failed');
    expect(unknownField.stderr).toContain('bad.app.toml: colour: is not a manifest field');

    const badUrl = await deploy(
      toml(app.id, SUBSCRIPTION.replace('https://carrier-sync.example/waybill', 'ftp://nope')),
    );
    expect(badUrl.code).toBe(1);
    expect(badUrl.stderr).toContain('bad.app.toml: subscriptions[0].url: ');

    const unknownPath = await deploy(
      toml(app.id, SUBSCRIPTION.replace('"data.shipment.status" = {', '"data.shipment.colour" = {')),
    );
    expect(unknownPath.stderr).toContain('Refused: 422 filter.unknown_path');
    expect(unknownPath.stderr).toContain(
      'subscriptions[0].filter."data.shipment.colour": data.shipment.colour is not in the schema',
    );

    const noScope = await deploy(
      toml(app.id, SUBSCRIPTION).replace(
        'scopes = ["shipments:read", "webhooks:write"]',
        'scopes = ["webhooks:write"]',
      ),
    );
    expect(noScope.stderr).toContain('Refused: 422 app_config.scope_missing');
    expect(noScope.stderr).toContain(
      'subscriptions[0].event_types[0]: shipment.status_changed needs the scope shipments:read',
    );

    const noApp = await deploy(toml(app.id).replace(/^app_id = .*$/m, ''));
    expect(noApp.code).toBe(2);
    expect(noApp.stderr).toContain('app_id');

    writeConfig('bad.app.toml', toml(app.id));
    const signedOut = await run(['app', 'deploy', '--config', 'bad.app.toml', '--api', w.url], {
      env: { XDG_CONFIG_HOME: join(home, 'nobody') },
    });
    expect(signedOut.code).toBe(1);
    expect(signedOut.stderr).toContain('Not signed in');
    expect(await versionsOf(app.id)).toHaveLength(1);
  });

  it('the portal shows the active version as waybill.app.toml, which deploys with no changes', async () => {
    const app = await registerApp(w, developer);
    const env = { WAYBILL_TOKEN: developer.token, WAYBILL_API_URL: w.url };
    writeConfig('portal.app.toml', toml(app.id, SUBSCRIPTION));
    const first = await run(['app', 'deploy', '--config', 'portal.app.toml', '--release', '--api', w.url], {
      env,
    });
    expect(first.code).toBe(0);

    const browser = new WebClient(w);
    await browser.signIn(developer.email, PASSWORD);
    const page = await browser.get(`/developer/apps/${app.id}/versions`);
    expect(page.status).toBe(200);
    const shown = /<pre class="secret">([\s\S]*?)<\/pre>/.exec(page.text)?.[1] ?? '';
    const text = shown
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
    expect(text).toContain(`app_id = "${app.id}"`);
    expect(text).toContain('[[subscriptions]]');
    writeConfig('shown.app.toml', text);
    const again = await run(['app', 'deploy', '--config', 'shown.app.toml', '--api', w.url], { env });
    expect(again.stderr).toBe('');
    expect(again.stdout).toContain('Created version 3');
    expect(again.stdout).toContain('no changes from the active version');
  });

  it("a subscription to a broker: deploy prints its destination masked, and the portal's file deploys again keeping the password", async () => {
    const app = await registerApp(w, developer);
    const env = { WAYBILL_TOKEN: developer.token, WAYBILL_API_URL: w.url };
    const password = 'broker-password-in-the-file';
    writeConfig(
      'broker.app.toml',
      toml(
        app.id,
        `
[[subscriptions]]
event_types = ["shipment.status_changed"]

[subscriptions.destination]
type = "rabbitmq"
url = "amqp://carrier:${password}@127.0.0.1:5672/carrier"
exchange = "waybill"
routing_key = "{event_type}"
`,
      ),
    );
    const first = await run(['app', 'deploy', '--config', 'broker.app.toml', '--release', '--api', w.url], {
      env,
    });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('amqp://carrier:****@127.0.0.1:5672/carrier');
    expect(first.stdout).not.toContain(password);

    const browser = new WebClient(w);
    await browser.signIn(developer.email, PASSWORD);
    const page = await browser.get(`/developer/apps/${app.id}/versions`);
    expect(page.text).not.toContain(password);
    const shown = /<pre class="secret">([\s\S]*?)<\/pre>/.exec(page.text)?.[1] ?? '';
    const text = shown
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, '&');
    expect(text).toContain('[subscriptions.destination]');
    writeConfig('broker-shown.app.toml', text);
    const again = await run(['app', 'deploy', '--config', 'broker-shown.app.toml', '--api', w.url], { env });
    expect(again.stderr).toBe('');
    expect(again.stdout).toContain('no changes from the active version');
    expect(again.stdout).not.toContain(password);
    // The new version holds the password, sealed: the masked URL kept it.
    const newest = await w.ctx.db
      .selectFrom('app_versions')
      .select('destinations_sealed')
      .where('app_id', '=', app.id)
      .orderBy('number', 'desc')
      .executeTakeFirstOrThrow();
    const [sealed] = JSON.parse(newest.destinations_sealed ?? '[]') as string[];
    expect(openDestination(w.ctx.secrets, sealed as string).url).toContain(`:${password}@`);
  });
});
