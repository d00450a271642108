import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  authorizationRequest,
  consent,
  discover,
  insecure,
  postForm,
  registerApp,
  signedInJar,
  type TestApp,
} from '../oauth/support.ts';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { listTools } from './support.ts';

/** RFC 8707 with oauth4webapi, unmodified: resource on authorize, token and refresh; audience-bound tokens. */
describe('resource indicators and audience-bound tokens', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  let company: CompanyFixture;
  let app: TestApp;
  const client = () => ({ client_id: app.clientId });

  beforeAll(async () => {
    w = await startWaybill();
    as = await discover(w);
    company = await createCompany(w);
    app = await registerApp(w, { kind: 'public' });
  });
  afterAll(async () => {
    await w?.close();
  });

  /** Consent and code for `resource` (undefined: none sent), exchanged with `tokenResource`. */
  async function tokensFor(resource: string | undefined, tokenResource?: string) {
    const jar = await signedInJar(w, company.owner);
    const request = await authorizationRequest(app, { resource: resource ?? null });
    const location = await consent(jar, request);
    const params = oauth.validateAuthResponse(as, client(), location, request.state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client(),
      oauth.None(),
      params,
      app.redirectUri,
      request.verifier,
      { ...insecure, ...(tokenResource ? { additionalParameters: { resource: tokenResource } } : {}) },
    );
    return { response, request };
  }

  it('publishes the protected resource metadata of CONTRACT.md at both addresses', async () => {
    for (const path of [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]) {
      const response = await fetch(`${w.url}${path}`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        resource: `${w.url}/mcp`,
        authorization_servers: [as.issuer],
        scopes_supported: ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'],
        bearer_methods_supported: ['header'],
        resource_name: 'Waybill MCP server',
      });
    }
    const unauthenticated = await fetch(`${w.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${w.url}/.well-known/oauth-protected-resource/mcp", scope="shipments:read"`,
    );
  });

  it('binds a grant to /mcp: the token works there, not at /v1; refresh keeps the resource', async () => {
    const { response } = await tokensFor(`${w.url}/mcp`, `${w.url}/mcp`);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client(), response);
    expect(tokens.access_token).toMatch(/^atk_test_/);
    expect((await listTools(w, tokens.access_token)).status).toBe(200);
    const v1 = await call(w, 'GET', '/v1/shipments', { token: tokens.access_token });
    expect(v1.status).toBe(401);
    expect(v1.body.code).toBe('auth.invalid_token');
    expect(v1.headers['www-authenticate']).toBe('Bearer realm="waybill", error="invalid_token"');

    // Refresh: repeating the resource is fine; naming another is invalid_target and spends nothing.
    const other = await oauth.refreshTokenGrantRequest(
      as,
      client(),
      oauth.None(),
      tokens.refresh_token as string,
      {
        ...insecure,
        additionalParameters: { resource: `${w.url}/v1` },
      },
    );
    await expect(oauth.processRefreshTokenResponse(as, client(), other)).rejects.toMatchObject({
      error: 'invalid_target',
    });
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client(),
      await oauth.refreshTokenGrantRequest(as, client(), oauth.None(), tokens.refresh_token as string, {
        ...insecure,
        additionalParameters: { resource: `HTTP://${new URL(w.url).host.toUpperCase()}/mcp/` },
      }),
    );
    expect((await listTools(w, refreshed.access_token)).status).toBe(200);
    expect((await call(w, 'GET', '/v1/shipments', { token: refreshed.access_token })).status).toBe(401);
    // Without resource: the grant's.
    const again = await oauth.processRefreshTokenResponse(
      as,
      client(),
      await oauth.refreshTokenGrantRequest(
        as,
        client(),
        oauth.None(),
        refreshed.refresh_token as string,
        insecure,
      ),
    );
    expect((await listTools(w, again.access_token)).status).toBe(200);
  });

  it('a token for /v1 (or none named: existing apps) is refused at /mcp with invalid_token', async () => {
    for (const resource of [undefined, `${w.url}/v1`]) {
      const { response } = await tokensFor(resource);
      const tokens = await oauth.processAuthorizationCodeResponse(as, client(), response);
      expect(tokens.access_token).toMatch(/^atk_live_/);
      expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
      const refused = await listTools(w, tokens.access_token);
      expect(refused.status).toBe(401);
      expect(refused.headers.get('www-authenticate')).toBe(
        `Bearer error="invalid_token", resource_metadata="${w.url}/.well-known/oauth-protected-resource/mcp", scope="shipments:read"`,
      );
    }
    // API keys and session tokens: no passthrough.
    for (const token of [company.testToken, company.liveToken, company.owner.token]) {
      expect((await listTools(w, token)).status).toBe(401);
    }
  });

  it('a code for /mcp exchanged for /v1 is invalid_target (400), and the code stays unspent', async () => {
    const { response, request } = await tokensFor(`${w.url}/mcp`, `${w.url}/v1`);
    expect(response.status).toBe(400);
    await expect(oauth.processAuthorizationCodeResponse(as, client(), response)).rejects.toMatchObject({
      error: 'invalid_target',
    });
    expect(request.verifier).toBeTruthy();
  });

  for (const bad of [
    'https://elsewhere.example/mcp',
    '/mcp',
    'MCP',
    'http://localhost/mcp#frag',
    'urn:waybill:mcp',
  ]) {
    it(`authorize with resource ${bad} redirects with invalid_target and iss; the token endpoint answers 400`, async () => {
      const target = bad.includes('#') ? `${w.url}/mcp#frag` : bad;
      const jar = await signedInJar(w, company.owner);
      const request = await authorizationRequest(app, { resource: target });
      const page = await jar.fetch(`/oauth/authorize?${request.query}`);
      expect(page.status).toBe(303);
      const location = new URL(page.headers.get('location') as string);
      expect(location.searchParams.get('error')).toBe('invalid_target');
      expect(location.searchParams.get('iss')).toBe(w.url);
      expect(location.searchParams.get('state')).toBe(request.state);
      const token = await postForm(w, '/oauth/token', {
        grant_type: 'refresh_token',
        refresh_token: 'atr_whatever',
        client_id: app.clientId,
        resource: target,
      });
      expect(token.status).toBe(400);
      expect(['invalid_target', 'invalid_grant']).toContain(token.body.error);
    });
  }

  it("two refreshes at once by a developer's app: one pair, then the second use revokes the family", async () => {
    const { response } = await tokensFor(`${w.url}/mcp`);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client(), response);
    const refresh = () =>
      oauth
        .refreshTokenGrantRequest(as, client(), oauth.None(), tokens.refresh_token as string, insecure)
        .then((r) => oauth.processRefreshTokenResponse(as, client(), r));
    const results = await Promise.allSettled([refresh(), refresh()]);
    const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(won).toHaveLength(1);
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({
      reason: { error: 'invalid_grant' },
    });
    expect((await listTools(w, won[0]?.access_token as string)).status).toBe(401);
    expect((await listTools(w, tokens.access_token)).status).toBe(401);
  });

  it('a tool call with wrong argument types is a tool error with validation.failed and changes nothing', async () => {
    const shipment = await createShipment(w, company.testToken);
    const { response } = await tokensFor(`${w.url}/mcp`);
    const tokens = await oauth.processAuthorizationCodeResponse(as, client(), response);
    for (const args of [
      { id: 42, status: 'picked_up' },
      { id: shipment.id, status: ['x'] },
      { id: shipment.id },
    ]) {
      const answer = await fetch(`${w.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens.access_token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 3,
          method: 'tools/call',
          params: { name: 'update_shipment_status', arguments: args },
        }),
      });
      expect(answer.status).toBe(200);
      const body = (await answer.json()) as {
        result: { isError: boolean; structuredContent: { code: string } };
      };
      expect(body.result.isError).toBe(true);
      expect(body.result.structuredContent.code).toBe('validation.failed');
    }
    const after = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.testToken });
    expect(after.body.status).toBe('confirmed');
    expect(after.body.updated_at).toBe(shipment.updated_at);
  });
});
