import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accountChoices,
  authorizationRequest,
  discover,
  formFields,
  insecure,
  signedInJar,
  type TestApp,
} from '../oauth/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { listTools } from './support.ts';

/** Agent connections: made by consent, listed, limited by agent_access, revoked, ended when the approver leaves. */
describe('agent connections', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  let company: CompanyFixture;
  let agent: TestApp;

  beforeAll(async () => {
    w = await startWaybill();
    as = await discover(w);
    company = await createCompany(w);
    const response = await fetch(`${w.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Ops Copilot',
        redirect_uris: ['http://127.0.0.1:47011/callback'],
        application_type: 'native',
        token_endpoint_auth_method: 'none',
        // Its own claims: never its host, never shown as verified.
        client_uri: 'https://claude.ai/',
        logo_uri: 'https://claude.ai/logo.png',
      }),
    });
    const registered = (await response.json()) as { client_id: string };
    agent = {
      clientId: registered.client_id,
      clientSecret: null,
      redirectUri: 'http://127.0.0.1:47011/callback',
      kind: 'public',
    };
  });
  afterAll(async () => {
    await w?.close();
  });

  /** The person approves the agent for `mode` on the consent page; the agent exchanges the code. */
  async function connect(person: Person, mode = 'test') {
    const jar = await signedInJar(w, person);
    const request = await authorizationRequest(agent, { resource: `${w.url}/mcp`, scope: 'shipments:read' });
    const page = await jar.fetch(`/oauth/authorize?${request.query}`);
    const text = await page.text();
    expect(page.status).toBe(200);
    expect(text).toContain('Ops Copilot');
    expect(text).toContain('Self-described');
    expect(text).toContain('you are sent to <strong>127.0.0.1:47011</strong>');
    expect(text).not.toContain('claude.ai');
    expect(text).toContain('name="mode" value="test" checked');
    const answer = await jar.postForm('/oauth/authorize', {
      ...formFields(text),
      account: accountChoices(text)[0] as string,
      mode,
      decision: 'approve',
    });
    if (answer.status !== 303) return { refused: answer.status, text: await answer.text() };
    const location = new URL(answer.headers.get('location') as string);
    const client = { client_id: agent.clientId };
    const params = oauth.validateAuthResponse(as, client, location, request.state);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      agent.redirectUri,
      request.verifier,
      insecure,
    );
    return { tokens: await oauth.processAuthorizationCodeResponse(as, client, response) };
  }

  it('consent makes an agc_ connection in test mode, listed apart from installations, with last use', async () => {
    await createShipment(w, company.testToken);
    const { tokens } = await connect(company.owner);
    expect(tokens?.access_token).toMatch(/^atk_test_/);
    const listed = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token: company.owner.token,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).toMatchObject({
      client_id: agent.clientId,
      client_name: 'Ops Copilot',
      client_host: '127.0.0.1:47011',
      self_described: true,
      mode: 'test',
      scopes: ['shipments:read'],
      customer_account_id: null,
      approved_by: company.owner.id,
      last_used_at: null,
    });
    expect(listed.body.data[0].id).toMatch(/^agc_/);
    const installations = await call(w, 'GET', `/v1/companies/${company.tenantId}/installations`, {
      token: company.owner.token,
    });
    expect(installations.body.data).toEqual([]);
    expect((await listTools(w, tokens?.access_token as string)).status).toBe(200);
    const after = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token: company.owner.token,
    });
    expect(after.body.data[0].last_used_at).toBe(w.clock.now().toISOString());

    const jar = await signedInJar(w, company.owner);
    const page = await (await jar.fetch('/dashboard/agents')).text();
    expect(page).toContain('Ops Copilot');
    expect(page).toContain('Self-described');
    expect(page).toContain('returns to 127.0.0.1:47011');
    expect(page).not.toContain('claude.ai');
    expect(page).toContain('test data');

    const revoked = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/agent-connections/${listed.body.data[0].id}`,
      { token: company.owner.token },
    );
    expect(revoked.status).toBe(204);
    expect((await listTools(w, tokens?.access_token as string)).status).toBe(401);
    const refresh = await oauth.refreshTokenGrantRequest(
      as,
      { client_id: agent.clientId },
      oauth.None(),
      tokens?.refresh_token as string,
      insecure,
    );
    expect(refresh.status).toBe(400);
  });

  it('agent_access: live refused for a test company; turning test off refuses consent and stops tokens (mcp.disabled)', async () => {
    const live = await connect(company.owner, 'live');
    expect(live.refused).toBe(403);
    const { tokens } = await connect(company.owner);
    const viewer = await signUpPerson(w, 'Viewer');
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: viewer.email, role: 'viewer' },
    });
    const notAllowed = await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: viewer.token,
      body: { agent_access: { test: false } },
    });
    expect(notAllowed.status).toBe(403);
    const off = await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: { agent_access: { test: false } },
    });
    expect(off.status).toBe(200);
    expect(off.body.agent_access).toEqual({ test: false, live: false });
    const disabled = await listTools(w, tokens?.access_token as string);
    expect(disabled.status).toBe(403);
    expect(((await disabled.json()) as { code: string }).code).toBe('mcp.disabled');
    expect((await connect(company.owner)).refused).toBe(403);
    await call(w, 'PATCH', `/v1/companies/${company.tenantId}`, {
      token: company.owner.token,
      body: { agent_access: { test: true } },
    });
    expect((await listTools(w, tokens?.access_token as string)).status).toBe(200);
  });

  it('the connection stops when the person who approved it leaves the company', async () => {
    const admin = await signUpPerson(w, 'Admin');
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: admin.email, role: 'admin' },
    });
    const { tokens } = await connect(admin);
    expect((await listTools(w, tokens?.access_token as string)).status).toBe(200);
    const left = await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${admin.id}`, {
      token: company.owner.token,
    });
    expect(left.status).toBe(204);
    expect((await listTools(w, tokens?.access_token as string)).status).toBe(401);
  });
});
