import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOUR } from '../../src/lib/clock.ts';
import { hashSecret } from '../../src/lib/ids.ts';
import { findAppByClientId, verifyClientSecret } from '../../src/modules/apps/registry.ts';
import { eventsSigningSecrets } from '../../src/modules/apps/secrets.ts';
import { call, createCompany, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { APP_BODY, install, issueAppTokens, registerApp } from './fixtures.ts';

let w: TestWaybill;
let developer: Person;

beforeAll(async () => {
  w = await startWaybill();
  developer = await signUpPerson(w, 'Dana Developer');
});
afterAll(async () => {
  await w?.close();
});

const appRow = (id: string) =>
  w.ctx.db.selectFrom('apps').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

describe('developer API: who may call it', () => {
  it('answers 401 without a token and 403 auth.session_required to API and app tokens, on every route', async () => {
    const app = await registerApp(w, developer);
    const company = await createCompany(w);
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
    });
    const { accessToken } = await issueAppTokens(w, {
      appId: app.id,
      installationId: installation.id,
      userId: company.owner.id,
    });
    const routes: Array<['GET' | 'POST' | 'PATCH' | 'PUT', string, unknown?]> = [
      ['POST', '/v1/developer/apps', APP_BODY],
      ['GET', '/v1/developer/apps'],
      ['GET', `/v1/developer/apps/${app.id}`],
      ['PATCH', `/v1/developer/apps/${app.id}`, { name: 'Renamed' }],
      ['POST', `/v1/developer/apps/${app.id}/client-secret/rotate`],
      ['PUT', `/v1/developer/apps/${app.id}/events`, { url: 'https://carrier-sync.example/events' }],
      ['GET', `/v1/developer/apps/${app.id}/events-secret`],
      ['POST', `/v1/developer/apps/${app.id}/events-secret/rotate`],
    ];
    for (const [method, path, body] of routes) {
      const none = await call(w, method, path, { body });
      expect(none.status, `${method} ${path}`).toBe(401);
      expect(none.body.code).toBe('auth.invalid_token');
      const unknown = await call(w, method, path, { body, token: 'ust_unknownunknownunknown' });
      expect(unknown.status).toBe(401);
      for (const token of [company.liveToken, company.testToken, accessToken]) {
        const refused = await call(w, method, path, { body, token });
        expect(refused.status, `${method} ${path} with ${token.slice(0, 8)}`).toBe(403);
        expect(refused.body.code).toBe('auth.session_required');
      }
    }
    // Nothing the refused calls sent changed the app.
    const row = await appRow(app.id);
    expect(row.name).toBe(APP_BODY.name);
    expect(row.events_url).toBeNull();
    expect(verifyClientSecret((await findAppByClientId(w.ctx, app.id)) as never, app.client_secret)).toBe(
      true,
    );
  });
});

describe('developer API: registering', () => {
  it('registers a confidential app: the secret is shown once and stored only as its SHA-256', async () => {
    const created = await call(w, 'POST', '/v1/developer/apps', { token: developer.token, body: APP_BODY });
    expect(created.status).toBe(201);
    const app = created.body;
    expect(app).toMatchObject({
      name: APP_BODY.name,
      kind: 'confidential',
      status: 'private',
      redirect_uris: APP_BODY.redirect_uris,
      scopes: APP_BODY.scopes,
      events_url: null,
      install_url: `${w.ctx.config.webUrl}/apps/${app.id}/install`,
    });
    expect(app.id).toMatch(/^app_[0-9A-Za-z]{22}$/);
    expect(app.client_id).toBe(app.id);
    expect(app.client_secret).toMatch(/^aps_[0-9A-Za-z]{43}$/);
    expect(app.events_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const row = await appRow(app.id);
    expect(row.client_secret_hash).toBe(hashSecret(app.client_secret));
    expect(JSON.stringify(row)).not.toContain(app.client_secret);
    expect(JSON.stringify(row)).not.toContain(app.events_secret.slice(6));
    expect(w.ctx.secrets.open(row.events_secret_sealed)).toBe(app.events_secret);

    const read = await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token });
    expect(read.status).toBe(200);
    expect(read.body.client_secret).toBeUndefined();
    expect(read.body.events_secret).toBeUndefined();
    expect(read.text).not.toContain(app.client_secret);
  });

  it('registers a public app without a client secret; it has none to rotate', async () => {
    const app = await registerApp(w, developer, { kind: 'public' });
    expect(app.client_secret).toBeUndefined();
    expect(app.events_secret).toMatch(/^whsec_/);
    expect((await appRow(app.id)).client_secret_hash).toBeNull();
    const rotate = await call(w, 'POST', `/v1/developer/apps/${app.id}/client-secret/rotate`, {
      token: developer.token,
    });
    expect(rotate.status).toBe(409);
    expect(rotate.body.code).toBe('app.not_confidential');
  });

  it.each([
    ['a fragment', 'https://carrier-sync.example/cb#frag'],
    ['an empty fragment', 'https://carrier-sync.example/cb#'],
    ['plain http off localhost', 'http://carrier-sync.example/cb'],
    ['plain http to a name that starts with localhost', 'http://localhost.evil.example/cb'],
    ['user-info', 'https://user:pass@carrier-sync.example/cb'],
    ['user-info without a password', 'https://attacker@carrier-sync.example/cb'],
    ['a relative reference', '/oauth/callback'],
    ['a custom scheme', 'com.example.app:/callback'],
    ['a javascript URI', 'javascript:alert(1)'],
    ['whitespace', 'https://carrier-sync.example/c b'],
    ['too much length', `https://carrier-sync.example/${'a'.repeat(2000)}`],
  ])('refuses a redirect URI with %s', async (_why, uri) => {
    const response = await call(w, 'POST', '/v1/developer/apps', {
      token: developer.token,
      body: { ...APP_BODY, redirect_uris: ['https://carrier-sync.example/ok', uri] },
    });
    expect(response.status).toBe(400);
    expect(response.headers['content-type']).toContain('application/problem+json');
    expect(response.body.code).toBe('app.invalid_redirect_uri');
    expect(response.body.errors).toEqual([{ path: '/redirect_uris/1', message: expect.any(String) }]);
  });

  it('refuses 0 or 11 redirect URIs, and the same URI twice; accepts 10 and loopback addresses', async () => {
    const eleven = Array.from({ length: 11 }, (_, i) => `https://carrier-sync.example/cb${i}`);
    for (const redirect_uris of [[], eleven, ['https://a.example/cb', 'https://a.example/cb']]) {
      const response = await call(w, 'POST', '/v1/developer/apps', {
        token: developer.token,
        body: { ...APP_BODY, redirect_uris },
      });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('app.invalid_redirect_uri');
      expect(response.body.errors.length).toBeGreaterThan(0);
    }
    const ten = [
      ...eleven.slice(0, 7),
      'http://localhost/cb',
      'http://127.0.0.1:9000/cb',
      'http://[::1]:8080/callback?x=1',
    ];
    const app = await registerApp(w, developer, { redirect_uris: ten });
    expect(app.redirect_uris).toEqual(ten);
    // Stored as given: exact-string comparison later depends on it.
    expect((await findAppByClientId(w.ctx, app.id))?.redirect_uris).toEqual(ten);
  });

  it('refuses scopes outside the catalogue, and an app asking for none', async () => {
    for (const scopes of [['shipments:read', 'admin:all'], [], ['SHIPMENTS:READ']]) {
      const response = await call(w, 'POST', '/v1/developer/apps', {
        token: developer.token,
        body: { ...APP_BODY, scopes },
      });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('app.invalid_scope');
    }
  });

  it('refuses links that are not https, and an events URL that is not https', async () => {
    for (const [field, value] of [
      ['homepage_url', 'http://carrier-sync.example'],
      ['privacy_url', 'ftp://carrier-sync.example/privacy'],
      ['support_url', 'not a url'],
      ['events_url', 'http://carrier-sync.example/events'],
      ['events_url', 'https://carrier-sync.example/events#x'],
    ]) {
      const response = await call(w, 'POST', '/v1/developer/apps', {
        token: developer.token,
        body: { ...APP_BODY, [field as string]: value },
      });
      expect(response.status, `${field} ${value}`).toBe(400);
      expect(response.body.code).toBe('validation.failed');
      expect(response.body.errors).toEqual([{ path: `/${field}`, message: expect.any(String) }]);
    }
    const app = await registerApp(w, developer, {
      homepage_url: null,
      events_url: 'https://carrier-sync.example/events',
    });
    expect(app).toMatchObject({ homepage_url: null, events_url: 'https://carrier-sync.example/events' });
  });

  it('refuses unknown fields and a missing kind', async () => {
    const extra = await call(w, 'POST', '/v1/developer/apps', {
      token: developer.token,
      body: { ...APP_BODY, status: 'published' },
    });
    expect(extra.status).toBe(400);
    const { kind: _kind, ...noKind } = APP_BODY;
    const missing = await call(w, 'POST', '/v1/developer/apps', { token: developer.token, body: noKind });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('validation.failed');
  });
});

describe('developer API: reading and changing', () => {
  it("lists the person's own apps, newest first, in pages", async () => {
    const person = await signUpPerson(w, 'Lister');
    const ids: string[] = [];
    for (const name of ['One', 'Two', 'Three']) {
      ids.push((await registerApp(w, person, { name })).id);
      w.clock.advance(1000);
    }
    await registerApp(w, developer, { name: 'Not theirs' });
    const first = await call(w, 'GET', '/v1/developer/apps?limit=2', { token: person.token });
    expect(first.status).toBe(200);
    expect(first.body.data.map((a: { id: string }) => a.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await call(w, 'GET', `/v1/developer/apps?limit=2&cursor=${first.body.next_cursor}`, {
      token: person.token,
    });
    expect(second.body.data.map((a: { id: string }) => a.id)).toEqual([ids[0]]);
    expect(second.body.next_cursor).toBeNull();
    expect(second.text).not.toContain('client_secret');
  });

  it("answers 404 for another developer's app, and changes nothing", async () => {
    const app = await registerApp(w, developer);
    const other = await signUpPerson(w, 'Other Developer');
    const attempts: Array<['GET' | 'POST' | 'PATCH' | 'PUT', string, unknown?]> = [
      ['GET', `/v1/developer/apps/${app.id}`],
      ['PATCH', `/v1/developer/apps/${app.id}`, { name: 'Hijacked' }],
      ['POST', `/v1/developer/apps/${app.id}/client-secret/rotate`],
      ['PUT', `/v1/developer/apps/${app.id}/events`, { url: 'https://evil.example/events' }],
      ['GET', `/v1/developer/apps/${app.id}/events-secret`],
      ['POST', `/v1/developer/apps/${app.id}/events-secret/rotate`],
      ['GET', '/v1/developer/apps/app_doesnotexist0000000000'],
    ];
    for (const [method, path, body] of attempts) {
      const response = await call(w, method, path, { token: other.token, body });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.code).toBe('app.not_found');
    }
    const row = await appRow(app.id);
    expect(row.name).toBe(APP_BODY.name);
    expect(row.client_secret_hash).toBe(hashSecret(app.client_secret));
    expect(row.events_url).toBeNull();
  });

  it('changes any field but kind', async () => {
    const app = await registerApp(w, developer);
    w.clock.advance(5000);
    const patch = {
      name: 'Carrier Sync 2',
      description: 'Now with returns',
      redirect_uris: ['https://carrier-sync.example/v2/callback'],
      scopes: ['shipments:write', 'shipments:read'],
      support_url: null,
      events_url: 'https://carrier-sync.example/events',
    };
    const updated = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: patch,
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      ...patch,
      scopes: ['shipments:read', 'shipments:write'],
      kind: 'confidential',
    });
    expect(updated.body.updated_at).not.toBe(app.updated_at);
    expect(updated.body.client_secret).toBeUndefined();

    const kind = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: { kind: 'public' },
    });
    expect(kind.status).toBe(400);
    expect(kind.body.code).toBe('validation.failed');
    expect((await appRow(app.id)).kind).toBe('confidential');

    const bad = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: { name: 'Should not stick', redirect_uris: ['http://evil.example/cb'] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('app.invalid_redirect_uri');
    expect((await appRow(app.id)).name).toBe('Carrier Sync 2');
  });

  it('rotating the client secret ends the old one at once and shows the new one once', async () => {
    const app = await registerApp(w, developer);
    const rotated = await call(w, 'POST', `/v1/developer/apps/${app.id}/client-secret/rotate`, {
      token: developer.token,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.client_secret).toMatch(/^aps_[0-9A-Za-z]{43}$/);
    expect(rotated.body.client_secret).not.toBe(app.client_secret);
    const record = await findAppByClientId(w.ctx, app.id);
    expect(record).not.toBeNull();
    expect(verifyClientSecret(record as never, app.client_secret)).toBe(false);
    expect(verifyClientSecret(record as never, rotated.body.client_secret)).toBe(true);
    expect((await appRow(app.id)).client_secret_hash).toBe(hashSecret(rotated.body.client_secret));
  });

  it('sets the events URL, reveals the events secret, and rotates it with 24 hours of overlap', async () => {
    const app = await registerApp(w, developer);
    const put = await call(w, 'PUT', `/v1/developer/apps/${app.id}/events`, {
      token: developer.token,
      body: { url: 'https://carrier-sync.example/events' },
    });
    expect(put.status).toBe(200);
    expect(put.body.events_url).toBe('https://carrier-sync.example/events');
    const insecure = await call(w, 'PUT', `/v1/developer/apps/${app.id}/events`, {
      token: developer.token,
      body: { url: 'http://carrier-sync.example/events' },
    });
    expect(insecure.status).toBe(400);

    const revealed = await call(w, 'GET', `/v1/developer/apps/${app.id}/events-secret`, {
      token: developer.token,
    });
    expect(revealed.body).toEqual({ secret: app.events_secret });
    const rotated = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-secret/rotate`, {
      token: developer.token,
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(app.events_secret);
    const again = await call(w, 'GET', `/v1/developer/apps/${app.id}/events-secret`, {
      token: developer.token,
    });
    expect(again.body.secret).toBe(rotated.body.secret);

    expect(eventsSigningSecrets(w.ctx, await appRow(app.id))).toEqual([
      rotated.body.secret,
      app.events_secret,
    ]);
    w.clock.advance(24 * HOUR + 1000);
    expect(eventsSigningSecrets(w.ctx, await appRow(app.id))).toEqual([rotated.body.secret]);
  });

  it('refuses direct changes to reviewed fields of a published app (409), but not the same values', async () => {
    const app = await registerApp(w, developer);
    await w.ctx.db.updateTable('apps').set({ status: 'published' }).where('id', '=', app.id).execute();
    const changes: Array<['PATCH' | 'PUT', string, unknown]> = [
      ['PATCH', '', { scopes: ['shipments:read'] }],
      ['PATCH', '', { redirect_uris: ['https://carrier-sync.example/new'] }],
      ['PATCH', '', { privacy_url: 'https://carrier-sync.example/new-privacy' }],
      ['PATCH', '', { homepage_url: null }],
      ['PATCH', '', { events_url: 'https://carrier-sync.example/events' }],
      ['PATCH', '', { name: 'Renamed while published' }],
      ['PUT', '/events', { url: 'https://carrier-sync.example/events' }],
    ];
    for (const [method, suffix, body] of changes) {
      const response = await call(w, method, `/v1/developer/apps/${app.id}${suffix}`, {
        token: developer.token,
        body,
      });
      expect(response.status, JSON.stringify(body)).toBe(409);
      expect(response.body.code).toBe('app.published_requires_review');
    }
    const row = await appRow(app.id);
    expect(row.scopes).toEqual(APP_BODY.scopes);
    expect(row.events_url).toBeNull();
    const same = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: { scopes: APP_BODY.scopes, name: APP_BODY.name },
    });
    expect(same.status).toBe(200);
    // Secrets are not reviewed: rotating them stays open.
    const rotate = await call(w, 'POST', `/v1/developer/apps/${app.id}/client-secret/rotate`, {
      token: developer.token,
    });
    expect(rotate.status).toBe(200);
  });
});

describe('API reference', () => {
  it('documents the developer and installations routes in the OpenAPI document', async () => {
    const doc = await call(w, 'GET', '/openapi.json');
    expect(doc.status).toBe(200);
    expect(Object.keys(doc.body.paths)).toEqual(
      expect.arrayContaining([
        '/v1/developer/apps',
        '/v1/developer/apps/{id}',
        '/v1/developer/apps/{id}/client-secret/rotate',
        '/v1/developer/apps/{id}/events',
        '/v1/developer/apps/{id}/events-secret',
        '/v1/developer/apps/{id}/events-secret/rotate',
        '/v1/companies/{tenant_id}/installations',
        '/v1/companies/{tenant_id}/installations/{inst_id}',
      ]),
    );
  });
});
