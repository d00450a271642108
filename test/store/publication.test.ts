import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  clientAuthOf,
  discover,
  insecure,
  obtainTokens,
  signedInJar,
  type TestApp,
} from '../oauth/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  type Json,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  JUSTIFICATIONS,
  listing,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signUpAs,
  startEventsReceiver,
  submit,
  submitAndDecide,
} from './support.ts';

let w: TestWaybill;
let as: oauth.AuthorizationServer;
let developer: Person;
let reviewer: Person;
let company: CompanyFixture;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  as = await discover(w);
  developer = await signUpPerson(w, 'Publishing Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  company = await createCompany(w, 'Installing Company');
  receiver = await startEventsReceiver(() => 200);
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

const REDIRECT = 'http://127.0.0.1:8765/callback';

async function publishedApp(): Promise<Json> {
  const app = await registerPublishable(w, developer, receiver.url, { redirect_uris: [REDIRECT] });
  const approved = await submitAndDecide(
    w,
    developer,
    reviewer,
    app.id,
    { listing: listing(app.scopes) },
    'approved',
  );
  expect(approved.status).toBe('approved');
  return app;
}

function asClient(app: Json): TestApp {
  return { clientId: app.id, clientSecret: app.client_secret, redirectUri: REDIRECT, kind: 'confidential' };
}

const store = (id: string, token = company.owner.token) => call(w, 'GET', `/v1/store/apps/${id}`, { token });
const developerApp = async (id: string) =>
  (await call(w, 'GET', `/v1/developer/apps/${id}`, { token: developer.token })).body;

describe('publication', () => {
  it('approval publishes the submitted values and the listing; the install link sends people on', async () => {
    const app = await registerPublishable(w, developer, receiver.url, { redirect_uris: [REDIRECT] });
    const before = await fetch(`${w.url}/apps/${app.id}/install`, { redirect: 'manual' });
    expect(before.status).toBe(200);
    expect(await before.text()).toContain('Installation starts from the app itself');
    expect((await store(app.id)).status).toBe(404);

    const secondReceiver = await startEventsReceiver(() => 202);
    await submitAndDecide(
      w,
      developer,
      reviewer,
      app.id,
      {
        listing: listing(app.scopes),
        app: { name: 'Route Planner 2', support_url: 'https://help.route-planner.example' },
        events_url: secondReceiver.url,
      },
      'approved',
    );
    await secondReceiver.close();
    expect(await developerApp(app.id)).toMatchObject({
      status: 'published',
      name: 'Route Planner 2',
      support_url: 'https://help.route-planner.example',
      events_url: secondReceiver.url,
      scopes: app.scopes,
    });
    const listed = await store(app.id);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({
      name: 'Route Planner 2',
      tagline: 'Delivery routes in one click',
      app_url: 'https://route-planner.example/start',
      support_url: 'https://help.route-planner.example',
      scopes: [
        { scope: 'shipments:read', justification: JUSTIFICATIONS['shipments:read'] },
        { scope: 'webhooks:write', justification: JUSTIFICATIONS['webhooks:write'] },
      ],
    });
    const after = await fetch(`${w.url}/apps/${app.id}/install`, { redirect: 'manual' });
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toBe('https://route-planner.example/start');
  });

  it('refuses direct changes to reviewed fields of the published app (409)', async () => {
    const app = await publishedApp();
    const changes: Array<['PATCH' | 'PUT', string, unknown]> = [
      ['PATCH', '', { scopes: ['shipments:read'] }],
      ['PATCH', '', { redirect_uris: ['https://route-planner.example/other'] }],
      ['PATCH', '', { privacy_url: 'https://route-planner.example/new-privacy' }],
      ['PATCH', '', { homepage_url: 'https://elsewhere.example' }],
      ['PATCH', '', { events_url: 'https://route-planner.example/events' }],
      ['PATCH', '', { name: 'Renamed' }],
      ['PATCH', '', { description: 'Something else' }],
      ['PUT', '/events', { url: 'https://route-planner.example/events' }],
    ];
    for (const [method, suffix, body] of changes) {
      const response = await call(w, method, `/v1/developer/apps/${app.id}${suffix}`, {
        token: developer.token,
        body,
      });
      expect(response.status, JSON.stringify(body)).toBe(409);
      expect(response.body.code).toBe('app.published_requires_review');
    }
    const same = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: { scopes: app.scopes, name: app.name },
    });
    expect(same.status).toBe(200);
  });

  it('an update goes through review: the store and the live app keep the approved values until then', async () => {
    const app = await publishedApp();
    const client = asClient(app);
    const installed = await obtainTokens(w, as, client, company.owner, {
      scope: 'shipments:read webhooks:write',
    });
    const scopes = ['shipments:read', 'shipments:write', 'webhooks:write'];
    const update = await submit(w, developer, app.id, {
      listing: listing(scopes, { tagline: 'Routes, now with status updates' }),
      app: { name: 'Route Planner Plus', scopes },
    });
    expect(update.status, update.text).toBe(201);
    expect(update.body.updates_published_app).toBe(true);

    // Until approval: the old name, scopes and listing everywhere.
    expect((await store(app.id)).body).toMatchObject({
      name: 'Route Planner',
      tagline: 'Delivery routes in one click',
    });
    expect(await developerApp(app.id)).toMatchObject({ name: 'Route Planner', scopes: app.scopes });
    const jar = await signedInJar(w, company.owner);
    const early = await authorizationRequest(client, { scope: 'shipments:write' });
    const refused = await jar.fetch(`/oauth/authorize?${early.query}`);
    expect(refused.status).toBe(303);
    expect(new URL(refused.headers.get('location') as string).searchParams.get('error')).toBe(
      'invalid_scope',
    );

    await call(w, 'POST', `/v1/review/submissions/${update.body.id}/start`, { token: reviewer.token });
    const approved = await call(w, 'POST', `/v1/review/submissions/${update.body.id}/decision`, {
      token: reviewer.token,
      body: { decision: 'approved' },
    });
    expect(approved.status).toBe(200);
    const shown = (await store(app.id)).body;
    expect(shown).toMatchObject({ name: 'Route Planner Plus', tagline: 'Routes, now with status updates' });
    expect(shown.scopes.map((s: Json) => s.scope)).toEqual(scopes);

    // The company keeps what it granted; the new scope needs a new approval.
    const installation = await call(
      w,
      'GET',
      `/v1/companies/${company.tenantId}/installations/${installed.installation_id}`,
      { token: company.owner.token },
    );
    expect(installation.body.scopes).toEqual(['shipments:read', 'webhooks:write']);
    const write = await call(w, 'POST', '/v1/shipments', {
      token: installed.access_token,
      body: { recipient_name: 'Ada', currency: 'EUR' },
    });
    expect(write.status).toBe(403);
    const now = await authorizationRequest(client, { scope: 'shipments:write' });
    const consent = await jar.fetch(`/oauth/authorize?${now.query}`);
    expect(consent.status).toBe(200);
  });

  it('the consent page shows each scope’s justification while the app is published', async () => {
    const app = await publishedApp();
    const jar = await signedInJar(w, company.owner);
    const request = await authorizationRequest(asClient(app), { scope: 'shipments:read webhooks:write' });
    const page = await (await jar.fetch(`/oauth/authorize?${request.query}`)).text();
    expect(page).toContain(`Why: ${JUSTIFICATIONS['shipments:read']}`);
    expect(page).toContain(`Why: ${JUSTIFICATIONS['webhooks:write']}`);
    await call(w, 'POST', `/v1/developer/apps/${app.id}/unpublish`, { token: developer.token });
    const privatePage = await (await jar.fetch(`/oauth/authorize?${request.query}`)).text();
    expect(privatePage).not.toContain('Creates an endpoint so that routes update');
  });

  it('unpublish takes the app off the store; installations and their tokens keep working', async () => {
    const app = await publishedApp();
    const client = asClient(app);
    const tokens = await obtainTokens(w, as, client, company.owner, {
      scope: 'shipments:read webhooks:write',
    });
    const unpublished = await call(w, 'POST', `/v1/developer/apps/${app.id}/unpublish`, {
      token: developer.token,
    });
    expect(unpublished.status).toBe(200);
    expect(unpublished.body.status).toBe('private');
    expect((await store(app.id)).status).toBe(404);
    const list = await call(w, 'GET', '/v1/store/apps?limit=100', { token: company.owner.token });
    expect(list.body.data.map((a: Json) => a.id)).not.toContain(app.id);

    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      { client_id: client.clientId },
      await oauth.refreshTokenGrantRequest(
        as,
        { client_id: client.clientId },
        clientAuthOf(client),
        tokens.refresh_token as string,
        insecure,
      ),
    );
    expect((await call(w, 'GET', '/v1/shipments', { token: refreshed.access_token })).status).toBe(200);
    // A private app installs from its link, which still leads to the app's own start page.
    const link = await fetch(`${w.url}/apps/${app.id}/install`, { redirect: 'manual' });
    expect(link.headers.get('location')).toBe('https://route-planner.example/start');
    // Unpublishing again changes nothing; someone else's app does not exist.
    expect(
      (await call(w, 'POST', `/v1/developer/apps/${app.id}/unpublish`, { token: developer.token })).body
        .status,
    ).toBe('private');
    const stranger = await signUpPerson(w, 'Stranger');
    const foreign = await call(w, 'POST', `/v1/developer/apps/${app.id}/unpublish`, {
      token: stranger.token,
    });
    expect(foreign.status).toBe(404);
  });
});
