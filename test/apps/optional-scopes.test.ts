import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testWorker } from '../delivery/support.ts';
import {
  authorizationRequest,
  clientAuthOf,
  consent,
  discover,
  insecure,
  scopeChoices,
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
import { messageProblems } from '../support/message-check.ts';
import { type Receiver, startReceiver, verify } from '../webhooks/api/support.ts';
import { APP_BODY, registerApp } from './fixtures.ts';

/**
 * Optional scopes (CONTRACT.md "Apps as code"): an installed app asks for a scope its manifest
 * declares optional, the consent page lists only that one, the company approves, the app gives it
 * back; each change is told to the app's events URL as `app.scopes_updated`, and the grant holds at
 * once for its tokens.
 */

let w: TestWaybill;
let as: oauth.AuthorizationServer;
let developer: Person;
let receiver: Receiver;
let app: Json;
let client: TestApp;
let company: CompanyFixture;

beforeAll(async () => {
  w = await startWaybill({ env: { WAYBILL_OAUTH_RATE_LIMIT: '1000' } });
  as = await discover(w);
  developer = await signUpPerson(w, 'Optional Developer');
  receiver = await startReceiver('/app-events');
  app = await registerApp(w, developer, { scopes: ['shipments:read'], events_url: receiver.url });
  client = {
    clientId: app.id,
    clientSecret: app.client_secret,
    redirectUri: 'http://localhost:8080/callback',
    kind: 'confidential',
  };
  company = await createCompany(w, 'Optional Co');
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

async function deployWithOptional(optional: string[]) {
  const manifest = {
    name: app.name,
    description: app.description,
    homepage_url: app.homepage_url,
    privacy_url: app.privacy_url,
    support_url: app.support_url,
    redirect_uris: APP_BODY.redirect_uris,
    scopes: ['shipments:read'],
    optional_scopes: optional,
    events_url: receiver.url,
  };
  const created = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions`, {
    token: developer.token,
    body: { manifest },
  });
  expect(created.status, created.text).toBe(201);
  const released = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions/${created.body.id}/release`, {
    token: developer.token,
  });
  expect(released.status, released.text).toBe(200);
}

/** The consent page for a scope, and its approval exchanged for tokens with oauth4webapi. */
async function authorize(scope: string): Promise<{ page: string; tokens: oauth.TokenEndpointResponse }> {
  const jar = await signedInJar(w, company.owner);
  const request = await authorizationRequest(client, { scope });
  const page = await (await jar.fetch(`/oauth/authorize?${request.query}`)).text();
  const location = await consent(jar, request);
  const params = oauth.validateAuthResponse(as, { client_id: client.clientId }, location, request.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    { client_id: client.clientId },
    clientAuthOf(client),
    params,
    client.redirectUri,
    request.verifier,
    insecure,
  );
  return {
    page,
    tokens: await oauth.processAuthorizationCodeResponse(as, { client_id: client.clientId }, response),
  };
}

/** Sends what is due; the app events that arrived since, verified with the app's events secret. */
async function deliverAll(): Promise<Json[]> {
  const before = receiver.received.length;
  const worker = testWorker(w);
  try {
    while ((await worker.tick()) > 0) {}
  } finally {
    await worker.stop();
  }
  return receiver.received.slice(before).map((message) => {
    const body = verify(app.events_secret, message, w.clock.now());
    expect(messageProblems(message)).toEqual([]);
    return body;
  });
}

const endpointBody = () => ({
  url: receiver.url.replace('/app-events', '/hooks'),
  event_types: ['shipment.created'],
});

describe('optional scopes', () => {
  it('refuses a scope the manifest declares neither required nor optional', async () => {
    const jar = await signedInJar(w, company.owner);
    const request = await authorizationRequest(client, { scope: 'shipments:read webhooks:write' });
    const answer = await jar.fetch(`/oauth/authorize?${request.query}`);
    expect(answer.status).toBe(303);
    const location = new URL(answer.headers.get('location') as string);
    expect(location.searchParams.get('error')).toBe('invalid_scope');
  });

  it('asked for and given back: app.scopes_updated twice, the grant followed at once', async () => {
    const first = await authorize('shipments:read');
    expect(first.tokens.scope).toBe('shipments:read');
    const installationId = first.tokens.installation_id as string;
    expect(await deliverAll()).toEqual([]); // a first installation is not a scope change

    await deployWithOptional(['webhooks:write']);
    const asked = await authorize('webhooks:write');
    // The consent page lists only what is new; what is held is named as kept.
    expect(scopeChoices(asked.page)).toEqual(['webhooks:write']);
    expect(asked.page).toContain('Already granted, and kept: shipments:read');
    expect(asked.tokens.installation_id).toBe(installationId);
    expect(asked.tokens.scope).toBe('shipments:read webhooks:write');
    const token = asked.tokens.access_token;
    const made = await call(w, 'POST', '/v1/webhook-endpoints', { token, body: endpointBody() });
    expect(made.status, made.text).toBe(201);

    const [granted, ...moreGranted] = await deliverAll();
    expect(moreGranted).toEqual([]);
    expect(granted?.type).toBe('app.scopes_updated');
    expect(granted?.tenant_id).toBe(company.tenantId);
    expect(granted?.data).toEqual({
      installation_id: installationId,
      customer_account_id: null,
      granted: ['webhooks:write'],
      revoked: [],
      scopes: ['shipments:read', 'webhooks:write'],
    });

    const back = await call(w, 'DELETE', '/v1/installation/scopes/webhooks:write', { token });
    expect(back.status, back.text).toBe(200);
    expect(back.body.scopes).toEqual(['shipments:read']);
    // The same token no longer holds the scope given back.
    const refused = await call(w, 'POST', '/v1/webhook-endpoints', { token, body: endpointBody() });
    expect(refused.status).toBe(403);
    const read = await call(w, 'GET', '/v1/installation', { token });
    expect(read.body.scopes).toEqual(['shipments:read']);

    const [revoked, ...moreRevoked] = await deliverAll();
    expect(moreRevoked).toEqual([]);
    expect(revoked?.type).toBe('app.scopes_updated');
    expect(revoked?.data).toEqual({
      installation_id: installationId,
      customer_account_id: null,
      granted: [],
      revoked: ['webhooks:write'],
      scopes: ['shipments:read'],
    });
    expect(revoked?.id).not.toBe(granted?.id);
  });

  it('a scope not held, or the last one, cannot be given back; nothing changes or is sent', async () => {
    const { tokens } = await authorize('shipments:read');
    const token = tokens.access_token;
    const notHeld = await call(w, 'DELETE', '/v1/installation/scopes/webhooks:write', { token });
    expect(notHeld.status).toBe(404);
    expect(notHeld.body.code).toBe('installation.scope_not_held');
    const strange = await call(w, 'DELETE', `/v1/installation/scopes/${encodeURIComponent('x'.repeat(90))}`, {
      token,
    });
    expect(strange.status).toBe(404);
    const last = await call(w, 'DELETE', '/v1/installation/scopes/shipments:read', { token });
    expect(last.status).toBe(409);
    expect(last.body.code).toBe('installation.last_scope');
    const read = await call(w, 'GET', '/v1/installation', { token });
    expect(read.body.scopes).toEqual(['shipments:read']);
    expect(await deliverAll()).toEqual([]);
    // An API token is not an app: refused before anything is looked at.
    const api = await call(w, 'DELETE', '/v1/installation/scopes/shipments:read', {
      token: company.liveToken,
    });
    expect(api.status).toBe(403);
  });
});
