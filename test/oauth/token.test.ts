import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, newSecret } from '../../src/lib/ids.ts';
import { spendAndIssueGrouped } from '../../src/modules/oauth/tokens.ts';
import { type CompanyFixture, call, createCompany } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  authorizationRequest,
  basic,
  consent,
  discover,
  insecure,
  obtainTokens,
  postForm,
  registerApp,
  setAppStatus,
  signedInJar,
  type TestApp,
} from './support.ts';

describe('the token endpoint', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  let company: CompanyFixture;
  let app: TestApp;
  let publicApp: TestApp;
  beforeAll(async () => {
    w = await startWaybill();
    as = await discover(w);
    company = await createCompany(w);
    app = await registerApp(w);
    publicApp = await registerApp(w, { kind: 'public' });
  });
  afterAll(async () => {
    await w?.close();
  });

  /** A fresh code for the app, with the verifier that goes with it. */
  async function freshCode(target = app) {
    const jar = await signedInJar(w, company.owner);
    const request = await authorizationRequest(target);
    const location = await consent(jar, request);
    return { code: location.searchParams.get('code') as string, verifier: request.verifier };
  }

  const codeForm = (code: string, verifier: string, extra: Record<string, string> = {}) => ({
    grant_type: 'authorization_code',
    code,
    redirect_uri: app.redirectUri,
    code_verifier: verifier,
    ...extra,
  });
  const auth = () => ({ authorization: basic(app.clientId, app.clientSecret as string) });

  function expectOAuthError(
    response: { status: number; headers: Headers; body: Record<string, unknown> },
    status: number,
    error: string,
  ) {
    expect(response.status).toBe(status);
    expect(response.body.error).toBe(error);
    expect(typeof response.body.error_description).toBe('string');
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('no-store');
  }

  it('answers spec 7 errors with their statuses, in RFC 6749 JSON', async () => {
    const { code, verifier } = await freshCode();
    expectOAuthError(
      await postForm(w, '/oauth/token', { ...codeForm(code, verifier), grant_type: 'password' }, auth()),
      400,
      'unsupported_grant_type',
    );
    expectOAuthError(
      await postForm(
        w,
        '/oauth/token',
        { ...codeForm(code, verifier), grant_type: 'client_credentials' },
        auth(),
      ),
      400,
      'unsupported_grant_type',
    );
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, 'too-short'), auth()),
      400,
      'invalid_request',
    );
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, `${'a'.repeat(42)}!`), auth()),
      400,
      'invalid_request',
    );
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, 'a'.repeat(129)), auth()),
      400,
      'invalid_request',
    );
    const { code_verifier: _, ...noVerifier } = codeForm(code, verifier);
    expectOAuthError(await postForm(w, '/oauth/token', noVerifier, auth()), 400, 'invalid_request');
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, 'b'.repeat(43)), auth()),
      400,
      'invalid_grant',
    );
    expectOAuthError(
      await postForm(
        w,
        '/oauth/token',
        codeForm(code, verifier, { redirect_uri: `${app.redirectUri}/` }),
        auth(),
      ),
      400,
      'invalid_grant',
    );
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm('atc_unknown', verifier), auth()),
      400,
      'invalid_grant',
    );
    // None of those spent the code.
    expect((await postForm(w, '/oauth/token', codeForm(code, verifier), auth())).status).toBe(200);
  });

  it('refuses a JSON body and repeated parameters with invalid_request', async () => {
    const { code, verifier } = await freshCode();
    const json = await fetch(`${w.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth() },
      body: JSON.stringify(codeForm(code, verifier)),
    });
    expect(json.status).toBe(400);
    expect(await json.json()).toMatchObject({ error: 'invalid_request' });
    const broken = await fetch(`${w.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth() },
      body: '{"grant_type":',
    });
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ error: 'invalid_request' });
    const repeated = await fetch(`${w.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...auth() },
      body: `${new URLSearchParams(codeForm(code, verifier))}&code=atc_other`,
    });
    expect(repeated.status).toBe(400);
    expect(await repeated.json()).toMatchObject({ error: 'invalid_request' });
  });

  it('authenticates clients: 401 invalid_client with WWW-Authenticate: Basic', async () => {
    const { code, verifier } = await freshCode();
    const cases: Array<[Record<string, string>, Record<string, string>]> = [
      [{}, {}],
      [{ authorization: basic(app.clientId, 'aps_wrong') }, {}],
      [{ authorization: basic('app_unknown000000000000000', 'aps_x') }, {}],
      [{}, { client_id: app.clientId }],
      [{}, { client_id: app.clientId, client_secret: 'aps_wrong' }],
      [{}, { client_id: publicApp.clientId, client_secret: 'aps_anything' }],
      [{ authorization: basic(publicApp.clientId, 'aps_anything') }, {}],
    ];
    for (const [headers, form] of cases) {
      const response = await postForm(w, '/oauth/token', { ...codeForm(code, verifier), ...form }, headers);
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    }
    // Basic and the form at once is two methods: invalid_request (RFC 6749 section 2.3).
    const both = await postForm(
      w,
      '/oauth/token',
      { ...codeForm(code, verifier), client_id: app.clientId, client_secret: app.clientSecret as string },
      auth(),
    );
    expectOAuthError(both, 400, 'invalid_request');
    // client_secret_post works.
    const post = await postForm(w, '/oauth/token', {
      ...codeForm(code, verifier),
      client_id: app.clientId,
      client_secret: app.clientSecret as string,
    });
    expect(post.status).toBe(200);
  });

  it('a code of another app, or for another redirect URI, is invalid_grant', async () => {
    const other = await registerApp(w);
    const { code, verifier } = await freshCode();
    const response = await postForm(w, '/oauth/token', codeForm(code, verifier), {
      authorization: basic(other.clientId, other.clientSecret as string),
    });
    expectOAuthError(response, 400, 'invalid_grant');
  });

  it('a code expires after 60 seconds by the clock', async () => {
    const { code, verifier } = await freshCode();
    w.clock.advance(61_000);
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, verifier), auth()),
      400,
      'invalid_grant',
    );
  });

  it('a reused code revokes the installation only once the client and verifier are proven', async () => {
    const { code, verifier } = await freshCode();
    const first = await postForm(w, '/oauth/token', codeForm(code, verifier), auth());
    expect(first.status).toBe(200);
    const access = first.body.access_token as string;
    // A thief holding only the code: wrong verifier, or no client secret. Nothing is revoked.
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, 'c'.repeat(43)), auth()),
      400,
      'invalid_grant',
    );
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, verifier, { client_id: app.clientId })),
      401,
      'invalid_client',
    );
    expect((await call(w, 'GET', '/v1/shipments', { token: access })).status).toBe(200);
    // The same client with the right verifier: a leak. Every token of the installation ends.
    expectOAuthError(
      await postForm(w, '/oauth/token', codeForm(code, verifier), auth()),
      400,
      'invalid_grant',
    );
    expect((await call(w, 'GET', '/v1/shipments', { token: access })).status).toBe(401);
    const refresh = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: first.body.refresh_token as string },
      auth(),
    );
    expectOAuthError(refresh, 400, 'invalid_grant');
    const audit = await w.ctx.db
      .selectFrom('audit_events')
      .selectAll()
      .where('action', '=', 'oauth.authorization_code_reused')
      .execute();
    expect(audit).toHaveLength(1);
    expect(audit[0]?.tenant_id).toBe(company.tenantId);
    expect(audit[0]?.details).toMatchObject({
      installation_id: first.body.installation_id,
      app_id: app.clientId,
    });
  });

  it('a refresh token reused after the 30 s window revokes every token of the installation, with an audit event', async () => {
    const tokens = await obtainTokens(w, as, app, company.owner);
    const client = { client_id: app.clientId };
    const clientAuth = oauth.ClientSecretPost(app.clientSecret as string);
    const rotated = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token as string, insecure),
    );
    w.clock.advance(31_000);
    const again = await oauth.refreshTokenGrantRequest(
      as,
      client,
      clientAuth,
      tokens.refresh_token as string,
      insecure,
    );
    await expect(oauth.processRefreshTokenResponse(as, client, again)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect((await call(w, 'GET', '/v1/shipments', { token: rotated.access_token })).status).toBe(401);
    const next = await oauth.refreshTokenGrantRequest(
      as,
      client,
      clientAuth,
      rotated.refresh_token as string,
      insecure,
    );
    await expect(oauth.processRefreshTokenResponse(as, client, next)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    const audit = await w.ctx.db
      .selectFrom('audit_events')
      .select('details')
      .where('action', '=', 'oauth.refresh_token_reused')
      .execute();
    expect(audit.map((a) => (a.details as { installation_id: string }).installation_id)).toContain(
      tokens.installation_id,
    );
  });

  it('two racing refreshes with one token: one pair, and the second use revokes it (spec 3.4: no grace for apps)', async () => {
    const tokens = await obtainTokens(w, as, app, company.owner);
    const form = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string };
    const results = await Promise.all([
      postForm(w, '/oauth/token', form, auth()),
      postForm(w, '/oauth/token', form, auth()),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400]);
    const won = results.find((r) => r.status === 200);
    expect(results.find((r) => r.status === 400)?.body.error).toBe('invalid_grant');
    const listed = await call(w, 'GET', '/v1/shipments', { token: won?.body.access_token as string });
    expect(listed.status).toBe(401);
  });

  /** The same verifier but for its last character. */
  const otherVerifier = (verifier: string) => `${verifier.slice(0, -1)}${verifier.endsWith('A') ? 'B' : 'A'}`;

  it('refreshes and code exchanges that arrive together each get their own tokens; a bad one among them fails alone', async () => {
    // One installation per app (approving again replaces the earlier tokens): a response mixed up
    // with another request's would show another installation.
    const apps = [await registerApp(w), await registerApp(w), await registerApp(w, { kind: 'public' })];
    const held = await Promise.all(
      apps.map(async (a) => ({ app: a, tokens: await obtainTokens(w, as, a, company.owner) })),
    );
    const refreshOf = (a: TestApp, token: string) =>
      a.clientSecret
        ? postForm(
            w,
            '/oauth/token',
            { grant_type: 'refresh_token', refresh_token: token },
            {
              authorization: basic(a.clientId, a.clientSecret),
            },
          )
        : postForm(w, '/oauth/token', {
            grant_type: 'refresh_token',
            refresh_token: token,
            client_id: a.clientId,
          });
    const codeApps = [await registerApp(w), await registerApp(w), await registerApp(w)];
    const codes = await Promise.all(codeApps.map(async (a) => ({ app: a, ...(await freshCode(a)) })));
    const [wrongSecret, ...results] = await Promise.all([
      postForm(
        w,
        '/oauth/token',
        { grant_type: 'refresh_token', refresh_token: held[0]?.tokens.refresh_token as string },
        {
          authorization: basic(apps[0]?.clientId as string, 'aps_wrong'),
        },
      ),
      ...held.map(({ app: a, tokens }) => refreshOf(a, tokens.refresh_token as string)),
      ...codes.map(({ app: a, code, verifier }, index) =>
        postForm(w, '/oauth/token', codeForm(code, index === 2 ? otherVerifier(verifier) : verifier), {
          authorization: basic(a.clientId, a.clientSecret as string),
        }),
      ),
    ]);
    expectOAuthError(wrongSecret as never, 401, 'invalid_client');
    const refreshed = results.slice(0, held.length);
    const exchanged = results.slice(held.length);
    for (const [index, response] of refreshed.entries()) {
      expect(response.status).toBe(200);
      expect(response.body.installation_id).toBe(held[index]?.tokens.installation_id);
    }
    expect(exchanged.map((r) => r.status)).toEqual([200, 200, 400]);
    expect(exchanged[2]?.body.error).toBe('invalid_grant');
    const issued = [...refreshed, ...exchanged.slice(0, 2)];
    expect(new Set(issued.map((r) => r.body.access_token)).size).toBe(issued.length);
    for (const response of issued) {
      expect(
        (await call(w, 'GET', '/v1/shipments', { token: response.body.access_token as string })).status,
      ).toBe(200);
    }
    // Each new refresh token is its holder's: it refreshes again, once.
    for (const [index, response] of refreshed.entries()) {
      const again = await refreshOf(held[index]?.app as TestApp, response.body.refresh_token as string);
      expect(again.status).toBe(200);
      expect(again.body.installation_id).toBe(held[index]?.tokens.installation_id);
    }
  });

  it('grants spent in one grouped statement each get their own tokens, and a bad one among them gets none', async () => {
    // Called in one tick: the first two go alone (two lanes), the other five share one statement.
    const apps = [
      await registerApp(w),
      await registerApp(w),
      await registerApp(w),
      await registerApp(w),
      await registerApp(w, { kind: 'public' }),
      await registerApp(w),
    ];
    const held = [];
    for (const a of apps) held.push({ app: a, tokens: await obtainTokens(w, as, a, company.owner) });
    const presentedOf = (a: TestApp, secret = a.clientSecret) => ({ clientId: a.clientId, secret });
    const last = held.at(-1) as (typeof held)[number];
    const proofs = [
      ...held.slice(0, -1).map(({ app: a, tokens }) => ({
        grantHash: hashSecret(tokens.refresh_token as string),
        presented: presentedOf(a),
      })),
      // The last app's token with a wrong secret: spent by nobody.
      {
        grantHash: hashSecret(last.tokens.refresh_token as string),
        presented: presentedOf(last.app, 'aps_wrong'),
      },
    ];
    const answers = await Promise.all(
      proofs.map((proof) => spendAndIssueGrouped(w.ctx, 'refresh_token', proof)),
    );
    expect(answers.at(-1)).toBeNull();
    for (const [index, answer] of answers.slice(0, -1).entries()) {
      expect(answer?.installation_id).toBe(held[index]?.tokens.installation_id);
      expect((await call(w, 'GET', '/v1/shipments', { token: answer?.access_token as string })).status).toBe(
        200,
      );
    }
    // The wrong secret spent nothing: the token still refreshes with the right one.
    const right = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: last.tokens.refresh_token as string },
      { authorization: basic(last.app.clientId, last.app.clientSecret as string) },
    );
    expect(right.status).toBe(200);
  });

  it('a refresh token of another app is invalid_grant and revokes nothing', async () => {
    const tokens = await obtainTokens(w, as, app, company.owner);
    const other = await registerApp(w);
    const response = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string },
      {
        authorization: basic(other.clientId, other.clientSecret as string),
      },
    );
    expectOAuthError(response, 400, 'invalid_grant');
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
  });

  it('a rotated client secret stops the old one at once', async () => {
    const mine = await registerApp(w);
    const tokens = await obtainTokens(w, as, mine, company.owner);
    const fresh = newSecret('aps_');
    await w.ctx.db
      .updateTable('apps')
      .set({ client_secret_hash: hashSecret(fresh) })
      .where('id', '=', mine.clientId)
      .execute();
    const form = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string };
    const old = await postForm(w, '/oauth/token', form, {
      authorization: basic(mine.clientId, mine.clientSecret as string),
    });
    expectOAuthError(old, 401, 'invalid_client');
    expect(
      (await postForm(w, '/oauth/token', form, { authorization: basic(mine.clientId, fresh) })).status,
    ).toBe(200);
  });

  it('a suspended app: invalid_client at the token endpoint, and its access tokens get 401', async () => {
    const mine = await registerApp(w);
    const tokens = await obtainTokens(w, as, mine, company.owner);
    await setAppStatus(w, mine.clientId, 'suspended');
    const refresh = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string },
      {
        authorization: basic(mine.clientId, mine.clientSecret as string),
      },
    );
    expectOAuthError(refresh, 401, 'invalid_client');
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(401);
    await setAppStatus(w, mine.clientId, 'private');
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
  });

  it('an access token expires after an hour by the clock', async () => {
    const tokens = await obtainTokens(w, as, app, company.owner);
    w.clock.advance(3599_000);
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
    w.clock.advance(2_000);
    expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(401);
  });
});
