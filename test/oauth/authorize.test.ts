import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  accountChoices,
  authorizationRequest,
  CookieJar,
  consent,
  csrfOf,
  formFields,
  PASSWORD,
  registerApp,
  scopeChoices,
  setAppStatus,
  signedInJar,
  type TestApp,
} from './support.ts';

describe('the authorization endpoint', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let app: TestApp;
  let jar: CookieJar;
  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    app = await registerApp(w, {
      redirectUris: ['http://127.0.0.1:8765/callback', 'https://app.example/cb?x=1'],
    });
    jar = await signedInJar(w, company.owner);
  });
  afterAll(async () => {
    await w?.close();
  });

  const open = async (query: URLSearchParams, on = jar) => on.fetch(`/oauth/authorize?${query}`);

  it.each([
    ['a trailing slash', 'http://127.0.0.1:8765/callback/'],
    ['another case', 'http://127.0.0.1:8765/Callback'],
    ['another port', 'http://127.0.0.1:8766/callback'],
    ['another host (open redirect)', 'https://evil.example/callback'],
    ['an added query', 'http://127.0.0.1:8765/callback?a=1'],
  ])('a redirect URI with %s gets an error page, never a redirect', async (_label, redirectUri) => {
    const { query } = await authorizationRequest(app, { redirect_uri: redirectUri });
    const response = await open(query);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await response.text()).toContain('not registered');
  });

  it('an unknown client or none gets an error page', async () => {
    for (const clientId of ['app_unknown000000000000000', null]) {
      const { query } = await authorizationRequest(app, { client_id: clientId });
      const response = await open(query);
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
    }
  });

  it('a suspended app cannot be authorized', async () => {
    const suspended = await registerApp(w);
    await setAppStatus(w, suspended.clientId, 'suspended');
    const response = await open((await authorizationRequest(suspended)).query);
    expect(response.status).toBe(403);
    expect(response.headers.get('location')).toBeNull();
  });

  it.each([
    ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
    ['no response_type', { response_type: null }, 'invalid_request'],
    ['no code_challenge', { code_challenge: null }, 'invalid_request'],
    ['a malformed code_challenge', { code_challenge: 'short' }, 'invalid_request'],
    ['plain PKCE', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['no code_challenge_method', { code_challenge_method: null }, 'invalid_request'],
    ['a scope the app did not register', { scope: 'shipments:read webhooks:read' }, 'invalid_scope'],
    ['an unknown scope', { scope: 'admin' }, 'invalid_scope'],
  ])('%s is sent back to the client with error, state and iss', async (_label, overrides, error) => {
    const request = await authorizationRequest(app, overrides);
    const response = await open(request.query);
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location') as string);
    expect(`${location.origin}${location.pathname}`).toBe(app.redirectUri);
    expect(location.searchParams.get('error')).toBe(error);
    expect(location.searchParams.get('state')).toBe(request.state);
    expect(location.searchParams.get('iss')).toBe(w.url);
  });

  it('a missing state is invalid_request, sent back without a state', async () => {
    const request = await authorizationRequest(app, { state: null });
    const response = await open(request.query);
    const location = new URL(response.headers.get('location') as string);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.has('state')).toBe(false);
    expect(location.searchParams.get('iss')).toBe(w.url);
  });

  it('keeps the registered query of a redirect URI and adds to it', async () => {
    const other = { ...app, redirectUri: 'https://app.example/cb?x=1' };
    const location = await consent(jar, await authorizationRequest(other));
    expect(location.searchParams.get('x')).toBe('1');
    expect(location.searchParams.get('code')).toMatch(/^atc_/);
  });

  it('a signed-out person signs in and comes back to the whole request', async () => {
    const person = await signUpPerson(w);
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: person.email, role: 'admin' },
    });
    const fresh = new CookieJar(w.url);
    const request = await authorizationRequest(app);
    const first = await open(request.query, fresh);
    expect(first.status).toBe(303);
    const signin = first.headers.get('location') as string;
    expect(signin).toBe(`/signin?return_to=${encodeURIComponent(`/oauth/authorize?${request.query}`)}`);
    const page = await (await fresh.fetch(signin)).text();
    const signedIn = await fresh.postForm('/signin', {
      ...formFields(page),
      _csrf: csrfOf(page),
      email: person.email,
      password: PASSWORD,
    });
    expect(signedIn.headers.get('location')).toBe(`/oauth/authorize?${request.query}`);
    const location = await consent(fresh, request);
    expect(
      oauth
        .validateAuthResponse({ issuer: w.url }, { client_id: app.clientId }, location, request.state)
        .get('code'),
    ).toMatch(/^atc_/);
  });

  it('the consent page shows the app, the scopes in plain words, and its protective headers', async () => {
    const response = await open((await authorizationRequest(app)).query);
    const page = await response.text();
    expect(page).toContain('Parcel Pal');
    expect(page).toContain('Prints labels &amp; &lt;b&gt;syncs&lt;/b&gt; shipments');
    expect(page).toContain('See your shipments and their status');
    expect(page).toContain('Create shipments and change their status');
    expect(page).toContain('href="https://parcelpal.example/privacy"');
    expect(page).toContain('href="https://parcelpal.example/support"');
    expect(response.headers.get('x-frame-options')).toBe('DENY');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self' http://127.0.0.1:8765");
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('re-checks the hidden fields on the POST and requires the CSRF token', async () => {
    const page = await (await open((await authorizationRequest(app)).query)).text();
    const fields = { ...formFields(page), account: accountChoices(page)[0] as string, decision: 'approve' };
    const tampered = await jar.postForm('/oauth/authorize', {
      ...fields,
      redirect_uri: 'https://evil.example/cb',
    });
    expect(tampered.status).toBe(400);
    expect(tampered.headers.get('location')).toBeNull();
    const plain = await jar.postForm('/oauth/authorize', { ...fields, code_challenge_method: 'plain' });
    expect(new URL(plain.headers.get('location') as string).searchParams.get('error')).toBe(
      'invalid_request',
    );
    const noCsrf = await jar.postForm('/oauth/authorize', { ...fields, _csrf: 'forged' });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.headers.get('location')).toBeNull();
    const foreignAccount = await jar.postForm('/oauth/authorize', {
      ...fields,
      account: crypto.randomUUID(),
    });
    expect(foreignAccount.status).toBe(403);
  });
});

describe('who may install, and what they may grant', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let app: TestApp;
  let accountId: string;
  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    app = await registerApp(w, {
      scopes: ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'],
    });
    const account = await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
      token: company.owner.token,
      body: { name: 'Corner Shop' },
    });
    accountId = account.body.id;
  });
  afterAll(async () => {
    await w?.close();
  });

  async function member(role: string, customerAccountId?: string) {
    const person = await signUpPerson(w);
    const added = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: {
        email: person.email,
        role,
        ...(customerAccountId ? { customer_account_id: customerAccountId } : {}),
      },
    });
    expect(added.status).toBe(201);
    return person;
  }

  it.each([['viewer'], ['member']])('a %s cannot install at all', async (role) => {
    const jar = await signedInJar(w, await member(role));
    const response = await jar.fetch(`/oauth/authorize?${(await authorizationRequest(app)).query}`);
    expect(response.status).toBe(403);
    expect(response.headers.get('location')).toBeNull();
    expect(await response.text()).toContain('Only owners, admins and merchant admins');
  });

  it('a merchant member cannot install either', async () => {
    const jar = await signedInJar(w, await member('merchant_member', accountId));
    const response = await jar.fetch(`/oauth/authorize?${(await authorizationRequest(app)).query}`);
    expect(response.status).toBe(403);
  });

  it('an owner picks the company or one of its merchant accounts', async () => {
    const jar = await signedInJar(w, company.owner);
    const page = await (
      await jar.fetch(`/oauth/authorize?${(await authorizationRequest(app)).query}`)
    ).text();
    expect(accountChoices(page)).toEqual([company.tenantId, `${company.tenantId}:${accountId}`]);
    expect(page).toContain('Corner Shop');
  });

  it('a merchant admin installs only into its own account', async () => {
    const jar = await signedInJar(w, await member('merchant_admin', accountId));
    const request = await authorizationRequest(app, { scope: 'shipments:read webhooks:write' });
    const page = await (await jar.fetch(`/oauth/authorize?${request.query}`)).text();
    expect(accountChoices(page)).toEqual([`${company.tenantId}:${accountId}`]);
    const location = await consent(jar, request);
    expect(location.searchParams.get('code')).toMatch(/^atc_/);
    const forged = await consent(jar, await authorizationRequest(app), {
      account: () => company.tenantId,
    }).catch((error: Error) => error.message);
    expect(forged).toContain('403');
  });
});

/** Agent clients (registered or metadata-document): what they may leave out, and what they may reach. */
describe('the authorization endpoint for agent clients', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  let agent: TestApp;
  let portalApp: TestApp;
  let jar: CookieJar;
  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w);
    // As an SDK 1.x client registers: no application_type, a loopback redirect.
    const registered = await fetch(`${w.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Stateless Agent',
        redirect_uris: ['http://127.0.0.1:47200/callback'],
        client_uri: 'https://claude.ai/',
      }),
    });
    expect(registered.status).toBe(201);
    agent = {
      clientId: ((await registered.json()) as { client_id: string }).client_id,
      clientSecret: null,
      redirectUri: 'http://127.0.0.1:47200/callback',
      kind: 'public',
    };
    portalApp = await registerApp(w, { kind: 'public' });
    jar = await signedInJar(w, company.owner);
  });
  afterAll(async () => {
    await w?.close();
  });

  const codeRow = (clientId: string) =>
    w.ctx.db
      .selectFrom('oauth_codes')
      .select(['resource', 'scopes'])
      .where('app_id', '=', clientId)
      .orderBy('created_at', 'desc')
      .executeTakeFirstOrThrow();

  it('an agent may leave out state with PKCE: the redirect carries no state; a portal app may not', async () => {
    const request = await authorizationRequest(agent, { state: null, scope: 'shipments:read' });
    const location = await consent(jar, request);
    expect(location.searchParams.get('code')).toMatch(/^atc_/);
    expect(location.searchParams.has('state')).toBe(false);
    expect(location.searchParams.get('iss')).toBe(w.url);
    // Denied without state: the same.
    const denied = await consent(jar, await authorizationRequest(agent, { state: null }), {
      decision: 'deny',
    });
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.has('state')).toBe(false);

    const portal = await jar.fetch(
      `/oauth/authorize?${(await authorizationRequest(portalApp, { state: null })).query}`,
    );
    const refused = new URL(portal.headers.get('location') as string);
    expect(refused.searchParams.get('error')).toBe('invalid_request');
    expect(refused.searchParams.get('error_description')).toBe('state is required');
  });

  it('without resource an agent is granted /mcp; asking for /v1 is invalid_target, sent back with iss', async () => {
    await consent(jar, await authorizationRequest(agent, { scope: 'shipments:read' }));
    expect((await codeRow(agent.clientId)).resource).toBe('mcp');
    const page = await jar.fetch(
      `/oauth/authorize?${(await authorizationRequest(agent, { state: null })).query}`,
    );
    expect(await page.text()).toContain('name="mode" value="test" checked');

    for (const v1 of [`${w.url}/v1`, `${w.url}/v1/`]) {
      const request = await authorizationRequest(agent, { resource: v1 });
      const response = await jar.fetch(`/oauth/authorize?${request.query}`);
      expect(response.status).toBe(303);
      const location = new URL(response.headers.get('location') as string);
      expect(`${location.origin}${location.pathname}`).toBe(agent.redirectUri);
      expect(location.searchParams.get('error')).toBe('invalid_target');
      expect(location.searchParams.get('state')).toBe(request.state);
      expect(location.searchParams.get('iss')).toBe(w.url);
    }
    // A portal app keeps /v1 as its default.
    await consent(jar, await authorizationRequest(portalApp));
    expect((await codeRow(portalApp.clientId)).resource).toBe('v1');
  });

  it('the consent page labels a registered client self-described, with its redirect host, never its client_uri', async () => {
    const page = await (
      await jar.fetch(`/oauth/authorize?${(await authorizationRequest(agent)).query}`)
    ).text();
    expect(page).toContain('Self-described');
    expect(page).toContain('you are sent to <strong>127.0.0.1:47200</strong>');
    expect(page).not.toContain('claude.ai');
    expect(page).not.toContain('Homepage');
  });

  it('the person unticks scopes: the code holds the rest; none, or one not offered, is refused', async () => {
    const request = await authorizationRequest(agent, {
      scope: 'shipments:read shipments:write webhooks:read',
    });
    const page = await (await jar.fetch(`/oauth/authorize?${request.query}`)).text();
    // An agent's consent lists every /mcp scope; the one not asked for is offered unticked.
    expect(scopeChoices(page)).toEqual([
      'shipments:read',
      'shipments:write',
      'webhooks:read',
      'webhooks:write',
    ]);
    const fields: Record<string, string | string[]> = {
      ...formFields(page),
      account: accountChoices(page)[0] as string,
      decision: 'approve',
    };
    expect(fields.grant_scope).toEqual(['shipments:read', 'shipments:write', 'webhooks:read']);

    const none = await jar.postForm('/oauth/authorize', { ...fields, grant_scope: [] });
    expect(none.status).toBe(400);
    expect(none.headers.get('location')).toBeNull();
    expect(await none.text()).toContain('Choose at least one permission');
    const added = await jar.postForm('/oauth/authorize', {
      ...fields,
      grant_scope: ['shipments:read', 'orders:write'],
    });
    expect(added.status).toBe(400);
    expect(added.headers.get('location')).toBeNull();

    const narrowed = await jar.postForm('/oauth/authorize', {
      ...fields,
      grant_scope: ['shipments:read', 'webhooks:read'],
    });
    expect(narrowed.status).toBe(303);
    expect(new URL(narrowed.headers.get('location') as string).searchParams.get('code')).toMatch(/^atc_/);
    expect((await codeRow(agent.clientId)).scopes).toEqual(['shipments:read', 'webhooks:read']);
  });
});
