import type * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uninstall } from '../../src/modules/apps/registry.ts';
import { resolveAppAccessToken } from '../../src/modules/oauth/access-tokens.ts';
import { grantableScopes } from '../../src/modules/oauth/authorize/accounts.ts';
import { type CompanyFixture, call, createCompany, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { basic, discover, obtainTokens, postForm, registerApp, type TestApp } from './support.ts';

describe('installations, people and app tokens over time', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  let company: CompanyFixture;
  let app: TestApp;
  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_OAUTH_RATE_LIMIT: '1000' } });
    as = await discover(w);
    company = await createCompany(w);
    app = await registerApp(w, { scopes: ['shipments:read', 'shipments:write', 'webhooks:write'] });
  });
  afterAll(async () => {
    await w?.close();
  });

  const auth = (a = app) => ({ authorization: basic(a.clientId, a.clientSecret as string) });

  async function admin() {
    const person = await signUpPerson(w);
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: person.email, role: 'admin' },
    });
    return person;
  }

  it('an uninstalled app: refresh is invalid_grant and the access token 401', async () => {
    const tokens = await obtainTokens(w, as, app, company.owner);
    await uninstall(w.ctx, company.tenantId, tokens.installation_id as string);
    const refresh = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string },
      auth(),
    );
    expect(refresh.status).toBe(400);
    expect(refresh.body.error).toBe('invalid_grant');
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(401);
  });

  it('a person who left the company: their app tokens stop at once, refresh too', async () => {
    const person = await admin();
    const tokens = await obtainTokens(w, as, app, person, { scope: 'shipments:read' });
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
    const removed = await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${person.id}`, {
      token: company.owner.token,
    });
    expect(removed.status).toBe(204);
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(401);
    const refresh = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string },
      auth(),
    );
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it("a token is limited to the approver's current role, not only to the grant", async () => {
    const person = await admin();
    const tokens = await obtainTokens(w, as, app, person, { scope: 'shipments:read webhooks:write' });
    const before = await resolveAppAccessToken(w.ctx, tokens.access_token);
    expect(before?.kind === 'app_token' && [...before.access.scopes].sort()).toEqual([
      'shipments:read',
      'webhooks:write',
    ]);
    // Demoted to viewer (leave and come back): webhooks:write is beyond the role now.
    await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${person.id}`, {
      token: company.owner.token,
    });
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: person.email, role: 'viewer' },
    });
    const after = await resolveAppAccessToken(w.ctx, tokens.access_token);
    expect(after?.kind === 'app_token' && [...after.access.scopes]).toEqual(['shipments:read']);
    expect(after).toMatchObject({
      kind: 'app_token',
      appId: app.clientId,
      access: {
        tenantId: company.tenantId,
        livemode: true,
        installationId: tokens.installation_id,
        userId: person.id,
      },
    });
  });

  it('the consent grant is the requested scopes the role holds', () => {
    expect(grantableScopes(['shipments:read', 'webhooks:write'], 'member')).toEqual({
      granted: ['shipments:read'],
      withheld: ['webhooks:write'],
    });
    expect(grantableScopes(['shipments:read', 'webhooks:write'], 'merchant_admin').withheld).toEqual([]);
  });

  it("revoking another client's token answers 200 and revokes nothing", async () => {
    const tokens = await obtainTokens(w, as, app, company.owner);
    const other = await registerApp(w);
    const response = await postForm(
      w,
      '/oauth/revoke',
      { token: tokens.refresh_token as string },
      auth(other),
    );
    expect(response.status).toBe(200);
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
    const bad = await postForm(
      w,
      '/oauth/revoke',
      { token: tokens.access_token },
      { authorization: basic(app.clientId, 'aps_wrong') },
    );
    expect(bad.status).toBe(401);
    expect(bad.body.error).toBe('invalid_client');
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
  });
});

describe('rate limits at the token and revoke endpoints', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_OAUTH_RATE_LIMIT: '3' } });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('guessing secrets is slowed per client and per address (OAuth 2.1 section 2.4.1)', async () => {
    const app = await registerApp(w);
    const guess = () =>
      postForm(
        w,
        '/oauth/token',
        { grant_type: 'refresh_token', refresh_token: 'atr_x' },
        { authorization: basic(app.clientId, 'aps_guess') },
      );
    const statuses = [];
    for (let i = 0; i < 4; i += 1) statuses.push((await guess()).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
    const limited = await guess();
    expect(limited.body).toEqual({ error: 'invalid_request', error_description: 'too many requests' });
    expect(limited.headers.get('retry-after')).not.toBeNull();
    // Another client from the same address is held by the per-address limit.
    const other = await registerApp(w);
    const otherClient = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: 'atr_x' },
      {
        authorization: basic(other.clientId, other.clientSecret as string),
      },
    );
    expect(otherClient.status).toBe(429);
    // The revoke endpoint has limits of its own.
    const revoke = () =>
      postForm(w, '/oauth/revoke', { token: 'atr_x' }, { authorization: basic(other.clientId, 'aps_guess') });
    const revokes = [];
    for (let i = 0; i < 4; i += 1) revokes.push((await revoke()).status);
    expect(revokes).toEqual([401, 401, 401, 429]);
  });
});
