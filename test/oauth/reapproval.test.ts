import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  authorizationRequest,
  clientAuthOf,
  consent,
  discover,
  insecure,
  obtainTokens,
  registerApp,
  signedInJar,
  type TestApp,
} from './support.ts';

/** A refresh as the app would make it; answers the new tokens or the OAuth error code. */
async function refresh(
  as: oauth.AuthorizationServer,
  app: TestApp,
  refreshToken: string,
): Promise<oauth.TokenEndpointResponse | string> {
  const client = { client_id: app.clientId };
  const response = await oauth.refreshTokenGrantRequest(
    as,
    client,
    clientAuthOf(app),
    refreshToken,
    insecure,
  );
  try {
    return await oauth.processRefreshTokenResponse(as, client, response);
  } catch (error) {
    if (error instanceof oauth.ResponseBodyError) return error.error;
    throw error;
  }
}

describe('approving an installed app again', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  let company: CompanyFixture;
  let app: TestApp;
  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_OAUTH_RATE_LIMIT: '1000' } });
    as = await discover(w);
    company = await createCompany(w, 'Reapprovals');
    app = await registerApp(w, { scopes: ['shipments:read', 'shipments:write', 'webhooks:write'] });
  });
  afterAll(async () => {
    await w?.close();
  });

  async function member(role: 'admin' | 'member'): Promise<Person> {
    const person = await signUpPerson(w, `Second ${role}`);
    const added = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: person.email, role },
    });
    expect(added.status).toBe(201);
    return person;
  }

  const shipment = { recipient_name: 'Grace', currency: 'EUR', parcels: [{ weight_grams: 100 }] };

  it('ends the earlier, wider tokens; the new ones carry only the narrower scope', async () => {
    const wide = await obtainTokens(w, as, app, company.owner, {
      scope: 'shipments:read shipments:write webhooks:write',
    });
    expect(wide.scope).toBe('shipments:read shipments:write webhooks:write');
    expect(
      (await call(w, 'POST', '/v1/shipments', { token: wide.access_token, body: shipment })).status,
    ).toBe(201);

    w.clock.advance(60_000);
    const second = await member('admin');
    const narrow = await obtainTokens(w, as, app, second, { scope: 'shipments:read' });
    expect(narrow.installation_id).toBe(wide.installation_id);
    expect(narrow.scope).toBe('shipments:read');

    // The first approval's tokens are gone: the access token answers 401, its refresh invalid_grant.
    const old = await call(w, 'GET', '/v1/shipments', { token: wide.access_token });
    expect(old.status).toBe(401);
    expect(old.body.code).toBe('auth.invalid_token');
    expect(await refresh(as, app, wide.refresh_token as string)).toBe('invalid_grant');

    // The new ones work, within the narrower scope, and refresh into the same narrow scope.
    expect((await call(w, 'GET', '/v1/shipments', { token: narrow.access_token })).status).toBe(200);
    const write = await call(w, 'POST', '/v1/shipments', { token: narrow.access_token, body: shipment });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('auth.insufficient_scope');
    const rotated = await refresh(as, app, narrow.refresh_token as string);
    expect(typeof rotated === 'object' && rotated.scope).toBe('shipments:read');
    if (typeof rotated !== 'object') throw new Error('refresh failed');
    expect((await call(w, 'GET', '/v1/shipments', { token: rotated.access_token })).status).toBe(200);
    expect(
      (await call(w, 'POST', '/v1/shipments', { token: rotated.access_token, body: shipment })).status,
    ).toBe(403);

    // The installation records who approved and when.
    const installation = await call(
      w,
      'GET',
      `/v1/companies/${company.tenantId}/installations/${narrow.installation_id}`,
      { token: company.owner.token },
    );
    expect(installation.status).toBe(200);
    expect(installation.body).toMatchObject({
      scopes: ['shipments:read'],
      user_id: second.id,
      approved_by: second.id,
      approved_at: w.clock.now().toISOString(),
    });

    // The new approver leaves: nothing of either approval is left alive.
    await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${second.id}`, {
      token: company.owner.token,
    });
    expect((await call(w, 'GET', '/v1/shipments', { token: rotated.access_token })).status).toBe(401);
    expect((await call(w, 'GET', '/v1/shipments', { token: wide.access_token })).status).toBe(401);
    expect(await refresh(as, app, rotated.refresh_token as string)).toBe('invalid_grant');
    expect(await refresh(as, app, wide.refresh_token as string)).toBe('invalid_grant');
  });

  it('a code from the earlier approval, not yet exchanged, no longer gives tokens', async () => {
    const other = await createCompany(w, 'Slow Exchange');
    const firstJar = await signedInJar(w, other.owner);
    const firstRequest = await authorizationRequest(app, { scope: 'shipments:read shipments:write' });
    const firstLocation = await consent(firstJar, firstRequest);

    const admin = await signUpPerson(w, 'Quick Admin');
    await call(w, 'POST', `/v1/companies/${other.tenantId}/members`, {
      token: other.owner.token,
      body: { email: admin.email, role: 'admin' },
    });
    const narrow = await obtainTokens(w, as, app, admin, { scope: 'shipments:read' });

    const client = { client_id: app.clientId };
    const params = oauth.validateAuthResponse(as, client, firstLocation, firstRequest.state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      clientAuthOf(app),
      params,
      app.redirectUri,
      firstRequest.verifier,
      insecure,
    );
    await expect(oauth.processAuthorizationCodeResponse(as, client, response)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    // The late code did not count as a replay: the new approval's tokens still work.
    expect((await call(w, 'GET', '/v1/shipments', { token: narrow.access_token })).status).toBe(200);
  });

  it("approving for one merchant account leaves the company-wide installation's tokens alone", async () => {
    const shop = await createCompany(w, 'Two Installs');
    const account = await call(w, 'POST', `/v1/companies/${shop.tenantId}/customer-accounts`, {
      token: shop.owner.token,
      body: { name: 'Corner Shop' },
    });
    const companyWide = await obtainTokens(w, as, app, shop.owner, {
      scope: 'shipments:read',
      account: (choices) => choices.find((c) => !c.includes(account.body.id)) as string,
    });
    const merchant = await obtainTokens(w, as, app, shop.owner, {
      scope: 'shipments:read',
      account: (choices) => choices.find((c) => c.includes(account.body.id)) as string,
    });
    expect(merchant.installation_id).not.toBe(companyWide.installation_id);
    expect((await call(w, 'GET', '/v1/shipments', { token: companyWide.access_token })).status).toBe(200);
    expect((await call(w, 'GET', '/v1/shipments', { token: merchant.access_token })).status).toBe(200);
  });

  it('the same person approving again also replaces their earlier tokens, and it is audited', async () => {
    const third = await createCompany(w, 'Same Person');
    const first = await obtainTokens(w, as, app, third.owner, { scope: 'shipments:read shipments:write' });
    const again = await obtainTokens(w, as, app, third.owner, { scope: 'shipments:read' });
    expect(again.installation_id).toBe(first.installation_id);
    expect((await call(w, 'GET', '/v1/shipments', { token: first.access_token })).status).toBe(401);
    expect((await call(w, 'GET', '/v1/shipments', { token: again.access_token })).status).toBe(200);
    const audit = await w.ctx.db
      .selectFrom('audit_events')
      .select(['action', 'actor', 'details'])
      .where('tenant_id', '=', third.tenantId)
      .where('action', '=', 'oauth.installation_approved')
      .execute();
    expect(audit).toHaveLength(2);
    expect(audit.map((event) => event.actor)).toEqual([third.owner.id, third.owner.id]);
    expect(audit.map((event) => (event.details as { revoked_tokens: number }).revoked_tokens).sort()).toEqual(
      [0, 2],
    );
  });
});
