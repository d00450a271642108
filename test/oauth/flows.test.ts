import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  authorizationRequest,
  clientAuthOf,
  consent,
  discover,
  insecure,
  registerApp,
  signedInJar,
} from './support.ts';

describe('OAuth 2.1 flows with oauth4webapi', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  beforeAll(async () => {
    w = await startWaybill();
    as = await discover(w);
  });
  afterAll(async () => {
    await w?.close();
  });

  it('publishes exactly the metadata of CONTRACT.md', async () => {
    const response = await fetch(`${w.url}/.well-known/oauth-authorization-server`);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual({
      issuer: w.url,
      authorization_endpoint: `${w.url}/oauth/authorize`,
      token_endpoint: `${w.url}/oauth/token`,
      revocation_endpoint: `${w.url}/oauth/revoke`,
      registration_endpoint: `${w.url}/oauth/register`,
      scopes_supported: ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });
    expect(as.issuer).toBe(w.url);
    expect(w.url.endsWith('/')).toBe(false);
  });

  for (const kind of ['confidential', 'public'] as const) {
    it(`runs the whole flow for a ${kind} app: consent, code, refresh, API, revoke`, async () => {
      const company = await createCompany(w);
      const app = await registerApp(w, { kind });
      const client: oauth.Client = { client_id: app.clientId };
      const auth = clientAuthOf(app, kind === 'confidential' ? 'basic' : 'post');

      const jar = await signedInJar(w, company.owner);
      const request = await authorizationRequest(app);
      const location = await consent(jar, request);
      expect(`${location.origin}${location.pathname}`).toBe(app.redirectUri);
      expect(location.searchParams.get('iss')).toBe(as.issuer);
      expect(location.searchParams.get('code')).toMatch(/^atc_[A-Za-z0-9]{43}$/);
      const params = oauth.validateAuthResponse(as, client, location, request.state);

      const codeResponse = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        auth,
        params,
        app.redirectUri,
        request.verifier,
        insecure,
      );
      expect(codeResponse.headers.get('cache-control')).toBe('no-store');
      expect(codeResponse.headers.get('pragma')).toBe('no-cache');
      const tokens = await oauth.processAuthorizationCodeResponse(as, client, codeResponse);
      expect(Object.keys(tokens).sort()).toEqual(
        [
          'access_token',
          'token_type',
          'expires_in',
          'refresh_token',
          'scope',
          'installation_id',
          'tenant_id',
          'customer_account_id',
        ].sort(),
      );
      expect(tokens).toMatchObject({
        token_type: 'bearer',
        expires_in: 3600,
        scope: 'shipments:read shipments:write',
        tenant_id: company.tenantId,
        customer_account_id: null,
      });
      expect(tokens.access_token).toMatch(/^atk_live_/);
      expect(tokens.refresh_token).toMatch(/^atr_/);
      expect(tokens.installation_id).toMatch(/^inst_/);

      // The token acts in the company, live, with the granted scopes.
      const shipment = await createShipment(w, company.liveToken);
      const read = await call(w, 'GET', '/v1/shipments', { token: tokens.access_token });
      expect(read.status).toBe(200);
      expect(read.body.data.map((s: { id: string }) => s.id)).toContain(shipment.id);

      const refreshResponse = await oauth.refreshTokenGrantRequest(
        as,
        client,
        auth,
        tokens.refresh_token as string,
        insecure,
      );
      const refreshed = await oauth.processRefreshTokenResponse(as, client, refreshResponse);
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
      expect(refreshed.installation_id).toBe(tokens.installation_id);
      expect((await call(w, 'GET', '/v1/shipments', { token: refreshed.access_token })).status).toBe(200);

      // Revoking an access token ends it alone.
      const revokeAccess = await oauth.revocationRequest(as, client, auth, refreshed.access_token, insecure);
      await oauth.processRevocationResponse(revokeAccess);
      expect((await call(w, 'GET', '/v1/shipments', { token: refreshed.access_token })).status).toBe(401);
      expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);

      // Revoking the refresh token ends every token of the installation.
      const revokeRefresh = await oauth.revocationRequest(
        as,
        client,
        auth,
        refreshed.refresh_token as string,
        insecure,
      );
      await oauth.processRevocationResponse(revokeRefresh);
      expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(401);
      const after = await oauth.refreshTokenGrantRequest(
        as,
        client,
        auth,
        refreshed.refresh_token as string,
        insecure,
      );
      await expect(oauth.processRefreshTokenResponse(as, client, after)).rejects.toMatchObject({
        error: 'invalid_grant',
      });

      // An unknown token is revoked "successfully" too (RFC 7009 section 2.2).
      const unknown = await oauth.revocationRequest(as, client, auth, 'atk_live_nothing', insecure);
      await oauth.processRevocationResponse(unknown);
    });
  }

  it('a denied request returns access_denied with state and iss', async () => {
    const company = await createCompany(w);
    const app = await registerApp(w);
    const jar = await signedInJar(w, company.owner);
    const request = await authorizationRequest(app);
    const location = await consent(jar, request, { decision: 'deny' });
    expect(location.searchParams.get('error')).toBe('access_denied');
    expect(location.searchParams.get('state')).toBe(request.state);
    expect(location.searchParams.get('iss')).toBe(w.url);
    expect(() =>
      oauth.validateAuthResponse(as, { client_id: app.clientId }, location, request.state),
    ).toThrow(oauth.AuthorizationResponseError);
  });

  it('approving again for the same account updates the one installation', async () => {
    const company = await createCompany(w);
    const app = await registerApp(w);
    const jar = await signedInJar(w, company.owner);
    const installationOf = async (location: URL) => {
      const code = location.searchParams.get('code') as string;
      const row = await w.ctx.db
        .selectFrom('oauth_codes')
        .select('installation_id')
        .where('code_hash', '=', (await import('../../src/lib/ids.ts')).hashSecret(code))
        .executeTakeFirst();
      return row?.installation_id;
    };
    const first = await consent(jar, await authorizationRequest(app, { scope: 'shipments:read' }));
    const firstInstallation = await installationOf(first);
    expect(firstInstallation).toMatch(/^inst_/);
    const second = await consent(jar, await authorizationRequest(app));
    expect(await installationOf(second)).toBe(firstInstallation);
    // The new approval ended what the first one gave, its unexchanged code included.
    expect(await installationOf(first)).toBeUndefined();
    const installs = await w.ctx.db
      .selectFrom('installations')
      .select(['id', 'scopes'])
      .where('app_id', '=', app.clientId)
      .execute();
    expect(installs).toHaveLength(1);
    expect(installs[0]?.scopes).toEqual(['shipments:read', 'shipments:write']);
  });
});
