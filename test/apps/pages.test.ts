import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/lib/ids.ts';
import { SCOPE_DESCRIPTIONS } from '../../src/modules/accounts/roles.ts';
import { findAppByClientId, verifyClientSecret } from '../../src/modules/apps/registry.ts';
import { createCompany, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { APP_BODY, install, registerApp } from './fixtures.ts';
import { fieldValue, WebClient } from './web-client.ts';

const PASSWORD = 'correct horse battery';
let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

const registration = {
  name: 'Portal App',
  description: 'Registered through the portal',
  homepage_url: 'https://portal-app.example',
  privacy_url: '',
  support_url: '',
  redirect_uris: 'https://portal-app.example/callback\r\nhttp://localhost:8080/callback\r\n',
  scopes: ['shipments:read', 'shipments:write'],
  kind: 'confidential',
  events_url: '',
};

describe('developer portal pages', () => {
  it('sends a signed-out person to sign in and back', async () => {
    const response = await new WebClient(w).get('/developer/apps');
    expect(response.status).toBe(303);
    expect(response.location).toBe(`/signin?return_to=${encodeURIComponent('/developer/apps')}`);
  });

  it('registers an app through the form and shows the client secret once', async () => {
    const person = await signUpPerson(w, 'Portal Developer');
    const browser = new WebClient(w);
    await browser.signIn(person.email, PASSWORD);

    const form = await browser.get('/developer/apps/new');
    expect(form.status).toBe(200);
    const forged = await browser.request('POST', '/developer/apps', { ...registration, _csrf: 'forged' });
    expect(forged.status).toBe(403);

    const invalid = await browser.post('/developer/apps', form.text, {
      ...registration,
      redirect_uris: 'http://portal-app.example/callback',
    });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toContain('plain http is only allowed for localhost');
    expect(invalid.text).toContain('Registered through the portal');
    expect(
      await w.ctx.db.selectFrom('apps').select('id').where('developer_id', '=', person.id).execute(),
    ).toEqual([]);

    const posted = await browser.post('/developer/apps', invalid.text, registration);
    // Post, redirect, get: the secrets travel in a one-time flash; a reload shows them no more.
    expect(posted.status).toBe(303);
    const created = await browser.get(posted.location as string);
    expect(created.status).toBe(200);
    const clientId = fieldValue(created.text, 'client_id') as string;
    const secret = fieldValue(created.text, 'client_secret') as string;
    expect(clientId).toMatch(/^app_/);
    expect(secret).toMatch(/^aps_[0-9A-Za-z]{43}$/);
    expect(fieldValue(created.text, 'events_secret')).toMatch(/^whsec_/);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const row = await w.ctx.db
      .selectFrom('apps')
      .selectAll()
      .where('id', '=', clientId)
      .executeTakeFirstOrThrow();
    expect(row.client_secret_hash).toBe(hashSecret(secret));
    expect(row.redirect_uris).toEqual([
      'https://portal-app.example/callback',
      'http://localhost:8080/callback',
    ]);
    expect(row.privacy_url).toBeNull();

    const list = await browser.get('/developer/apps');
    expect(list.text).toContain('Portal App');
    expect(list.text).not.toContain(secret);
    const detail = await browser.get(`/developer/apps/${clientId}`);
    expect(detail.status).toBe(200);
    expect(detail.text).not.toContain(secret);
    expect(fieldValue(detail.text, 'install_url')).toBe(`${w.ctx.config.webUrl}/apps/${clientId}/install`);

    // Rotating asks once more; the first click changes nothing.
    const question = await browser.get(`/developer/apps/${clientId}/client-secret/rotate`);
    expect(question.text).toContain('stops working at once');
    expect(verifyClientSecret((await findAppByClientId(w.ctx, clientId)) as never, secret)).toBe(true);
    const rotatedAt = await browser.post(`/developer/apps/${clientId}/client-secret/rotate`, question.text, {
      confirmed: 'yes',
    });
    expect(rotatedAt.status).toBe(303);
    const rotated = await browser.get(rotatedAt.location as string);
    expect(rotated.status).toBe(200);
    const newSecret = fieldValue(rotated.text, 'client_secret') as string;
    expect(newSecret).toMatch(/^aps_/);
    const record = await findAppByClientId(w.ctx, clientId);
    expect(verifyClientSecret(record as never, secret)).toBe(false);
    expect(verifyClientSecret(record as never, newSecret)).toBe(true);
  });

  it('edits an app, reveals and rotates the events secret, and hides apps of others', async () => {
    const person = await signUpPerson(w, 'Editor');
    const app = await registerApp(w, person);
    const browser = new WebClient(w);
    await browser.signIn(person.email, PASSWORD);
    const detail = await browser.get(`/developer/apps/${app.id}`);
    const saved = await browser.post(`/developer/apps/${app.id}`, detail.text, {
      ...registration,
      name: 'Edited <b>name</b>',
      kind: 'public',
      events_url: 'https://portal-app.example/events',
    });
    expect(saved.status).toBe(303);
    const after = await browser.get(saved.location as string);
    expect(after.text).toContain('Edited &lt;b&gt;name&lt;/b&gt;');
    expect(after.text).toContain('Saved.');
    const row = await w.ctx.db
      .selectFrom('apps')
      .selectAll()
      .where('id', '=', app.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ kind: 'confidential', events_url: 'https://portal-app.example/events' });

    const refused = await browser.post(`/developer/apps/${app.id}`, after.text, {
      ...registration,
      scopes: [],
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('scopes');

    const revealed = await browser.get(`/developer/apps/${app.id}/events-secret`);
    expect(fieldValue(revealed.text, 'events_secret')).toBe(app.events_secret);
    const question = await browser.get(`/developer/apps/${app.id}/events-secret/rotate`);
    expect(question.text).toContain('Rotate the events secret of');
    const skipped = await browser.post(`/developer/apps/${app.id}/events-secret/rotate`, revealed.text);
    expect(skipped.location).toBe(`/developer/apps/${app.id}/events-secret/rotate`);
    const rotatedAt = await browser.post(`/developer/apps/${app.id}/events-secret/rotate`, question.text, {
      confirmed: 'yes',
    });
    const rotated = await browser.get(rotatedAt.location as string);
    const fresh = fieldValue(rotated.text, 'events_secret');
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(app.events_secret);

    const otherApp = await registerApp(w, await signUpPerson(w, 'Someone else'));
    for (const path of [`/developer/apps/${otherApp.id}`, `/developer/apps/${otherApp.id}/events-secret`]) {
      const response = await browser.get(path);
      expect(response.status).toBe(404);
      expect(response.text).not.toContain(otherApp.name === APP_BODY.name ? otherApp.client_id : 'never');
    }
    const rotateOther = await browser.post(`/developer/apps/${otherApp.id}/client-secret/rotate`, after.text);
    expect(rotateOther.status).toBe(404);
    const otherRecord = await findAppByClientId(w.ctx, otherApp.id);
    expect(verifyClientSecret(otherRecord as never, otherApp.client_secret)).toBe(true);
  });
});

describe('the install link page', () => {
  it('shows the app, its links and scopes in plain words, and where to begin', async () => {
    const app = await registerApp(w, await signUpPerson(w), { name: 'Sync <script>alert(1)</script>' });
    const page = await new WebClient(w).get(`/apps/${app.id}/install`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Sync &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(page.text).not.toContain('<script>alert(1)');
    expect(page.text).toContain(APP_BODY.description);
    expect(page.text).toContain(`href="${APP_BODY.privacy_url}"`);
    for (const scope of APP_BODY.scopes)
      expect(page.text).toContain(SCOPE_DESCRIPTIONS[scope as 'shipments:read']);
    expect(page.text).toContain('Installation starts from the app itself');
  });

  it('answers 404 for an unknown or suspended app', async () => {
    const unknown = await new WebClient(w).get('/apps/app_doesnotexist000000000/install');
    expect(unknown.status).toBe(404);
    const app = await registerApp(w, await signUpPerson(w));
    await w.ctx.db.updateTable('apps').set({ status: 'suspended' }).where('id', '=', app.id).execute();
    const suspended = await new WebClient(w).get(`/apps/${app.id}/install`);
    expect(suspended.status).toBe(404);
    expect(suspended.text).not.toContain(app.name);
  });
});

describe('the dashboard Apps page', () => {
  it('lists installed apps with their granted scopes and uninstalls one (CSRF protected)', async () => {
    const company = await createCompany(w, 'Dashboard Co');
    const app = await registerApp(w, await signUpPerson(w), { name: 'Installed Helper' });
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
      scopes: ['shipments:read'],
    });
    const browser = new WebClient(w);
    await browser.signIn(company.owner.email, PASSWORD);
    const page = await browser.get('/dashboard/apps');
    expect(page.status).toBe(200);
    expect(page.text).toContain('Installed Helper');
    expect(page.text).toContain(SCOPE_DESCRIPTIONS['shipments:read']);
    expect(page.text).not.toContain(SCOPE_DESCRIPTIONS['webhooks:write']);

    const forged = await browser.request('POST', `/dashboard/apps/${installation.id}/uninstall`, {
      _csrf: 'forged',
    });
    expect(forged.status).toBe(403);
    const stillThere = await w.ctx.db
      .selectFrom('installations')
      .select('id')
      .where('id', '=', installation.id)
      .execute();
    expect(stillThere).toHaveLength(1);

    // The button is a link to the question, a page of its own that changes nothing.
    expect(page.text).toContain(`href="/dashboard/apps/${installation.id}/uninstall"`);
    const unasked = await browser.post(`/dashboard/apps/${installation.id}/uninstall`, page.text);
    expect(unasked.status).toBe(303);
    expect(unasked.location).toBe(`/dashboard/apps/${installation.id}/uninstall`);
    const question = await browser.get(`/dashboard/apps/${installation.id}/uninstall`);
    expect(question.status).toBe(200);
    expect(question.text).toContain('Uninstall Installed Helper?');
    const asked = await w.ctx.db
      .selectFrom('installations')
      .select('id')
      .where('id', '=', installation.id)
      .execute();
    expect(asked).toHaveLength(1);
    const removed = await browser.post(`/dashboard/apps/${installation.id}/uninstall`, question.text, {
      confirmed: 'yes',
    });
    expect(removed.status).toBe(303);
    expect(removed.location).toBe('/dashboard/apps');
    const gone = await w.ctx.db
      .selectFrom('installations')
      .select('id')
      .where('id', '=', installation.id)
      .execute();
    expect(gone).toHaveLength(0);
    const after = await browser.get(removed.location as string);
    expect(after.text).toContain('Installed Helper was uninstalled.');
    expect(after.text).not.toContain('<td>Installed Helper');
    expect(after.text).toContain('No apps are installed.');
    // A reload repeats nothing and says it no more.
    expect((await browser.get('/dashboard/apps')).text).not.toContain('was uninstalled');
  });
});
