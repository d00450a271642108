import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp } from '../apps/fixtures.ts';
import {
  type Receiver as AnsweringReceiver,
  startReceiver as startAnsweringReceiver,
  testWorker,
  verify as verifyReceived,
} from '../delivery/support.ts';
import { listTools, mcpTokens } from '../mcp/support.ts';
import { REVIEWERS, reviewerEnv, signUpAs } from '../store/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  type Json,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Receiver, startReceiver, verify } from '../webhooks/api/support.ts';
import { clientAuthOf, discover, insecure, obtainTokens, type TestApp } from './support.ts';

/**
 * CONTRACT.md (Agents), issue 39 item 3: a store app approved for /v1 and for /mcp holds two grants;
 * approving one never changes the mode, scopes or tokens of the other, and the app's subscriptions
 * follow its /v1 installation (a test-mode grant never gets live events).
 */
describe('one grant per resource', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  let developer: Person;
  let receiver: Receiver;
  let appEvents: AnsweringReceiver;
  let reviewer: Person;
  let app: Json;
  let client: TestApp;

  beforeAll(async () => {
    w = await startWaybill(reviewerEnv);
    as = await discover(w);
    developer = await signUpPerson(w, 'Store Developer');
    receiver = await startReceiver('/subscription');
    appEvents = await startAnsweringReceiver();
    reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
    app = await registerApp(w, developer, {
      scopes: ['shipments:read', 'shipments:write'],
      events_url: appEvents.url,
    });
    client = {
      clientId: app.id,
      clientSecret: app.client_secret,
      redirectUri: 'http://localhost:8080/callback',
      kind: 'confidential',
    };
    const { kind: _kind, client_secret: _s, events_secret: _e, ...listing } = app;
    const version = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions`, {
      token: developer.token,
      body: {
        manifest: {
          name: listing.name,
          description: listing.description,
          homepage_url: listing.homepage_url,
          privacy_url: listing.privacy_url,
          support_url: listing.support_url,
          redirect_uris: listing.redirect_uris,
          scopes: ['shipments:read', 'shipments:write'],
          events_url: appEvents.url,
          subscriptions: [{ event_types: ['shipment.created'], url: receiver.url }],
        },
      },
    });
    expect(version.status, version.text).toBe(201);
    const released = await call(
      w,
      'POST',
      `/v1/developer/apps/${app.id}/versions/${version.body.id}/release`,
      { token: developer.token },
    );
    expect(released.status, released.text).toBe(200);
  });
  afterAll(async () => {
    await receiver?.close();
    await appEvents?.close();
    await w?.close();
  });

  /** The owner approves (test mode where a mode is asked) and the app exchanges the code. */
  const approve = (company: CompanyFixture, authorize: Record<string, string>) =>
    obtainTokens(w, as, client, company.owner, { authorize });
  const forRest = (company: CompanyFixture) => approve(company, { scope: 'shipments:read shipments:write' });
  const forMcp = (company: CompanyFixture) =>
    approve(company, { scope: 'shipments:read', resource: `${w.url}/mcp` });

  async function deliverAll(): Promise<Json[]> {
    const before = receiver.received.length;
    const worker = testWorker(w);
    try {
      while ((await worker.tick()) > 0) {}
    } finally {
      await worker.stop();
    }
    return receiver.received
      .slice(before)
      .map((message) => verify(app.events_secret, message, w.clock.now()));
  }

  /** Each grant as the company sees it: its installation (/v1) and its agent connection (/mcp). */
  async function grantsOf(company: CompanyFixture) {
    const token = company.owner.token;
    const installations = await call(w, 'GET', `/v1/companies/${company.tenantId}/installations`, { token });
    const connections = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token,
    });
    return {
      installations: installations.body.data.map((i: Json) => ({ id: i.id, scopes: [...i.scopes].sort() })),
      connections: connections.body.data.map((c: Json) => ({
        client_id: c.client_id,
        mode: c.mode,
        scopes: c.scopes,
      })),
    };
  }

  async function expectRestGrantStands(company: CompanyFixture, rest: oauth.TokenEndpointResponse) {
    expect(rest.access_token.startsWith('atk_live_')).toBe(true);
    expect((await call(w, 'GET', '/v1/shipments', { token: rest.access_token })).status).toBe(200);
    // Its subscription gets live events, and only its installation does.
    const live = await createShipment(w, company.liveToken);
    await createShipment(w, company.testToken);
    const arrived = await deliverAll();
    expect(arrived.map((m) => [m.installation_id, m.type, m.data.shipment.id])).toEqual([
      [rest.installation_id, 'shipment.created', live.id],
    ]);
  }

  it('an approval for /mcp in test mode leaves the /v1 installation live, its scopes, tokens and subscriptions', async () => {
    const company = await createCompany(w, 'Rest First');
    const rest = await forRest(company);
    const mcp = await forMcp(company);
    expect(mcp.access_token.startsWith('atk_test_')).toBe(true);
    expect(mcp.installation_id).not.toBe(rest.installation_id);
    expect((await listTools(w, mcp.access_token)).status).toBe(200);
    expect(await grantsOf(company)).toEqual({
      installations: [{ id: rest.installation_id, scopes: ['shipments:read', 'shipments:write'] }],
      connections: [{ client_id: app.id, mode: 'test', scopes: ['shipments:read'] }],
    });
    await expectRestGrantStands(company, rest);
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      { client_id: client.clientId },
      await oauth.refreshTokenGrantRequest(
        as,
        { client_id: client.clientId },
        clientAuthOf(client),
        rest.refresh_token as string,
        insecure,
      ),
    );
    expect(refreshed.access_token.startsWith('atk_live_')).toBe(true);
    expect(refreshed.scope).toBe('shipments:read shipments:write');
  });

  it('and the reverse: an approval for /v1 leaves the /mcp grant in test mode with its tokens', async () => {
    const company = await createCompany(w, 'Agent First');
    const mcp = await forMcp(company);
    const rest = await forRest(company);
    expect((await listTools(w, mcp.access_token)).status).toBe(200);
    expect((await call(w, 'GET', '/v1/shipments', { token: mcp.access_token })).status).toBe(401);
    expect(await grantsOf(company)).toEqual({
      installations: [{ id: rest.installation_id, scopes: ['shipments:read', 'shipments:write'] }],
      connections: [{ client_id: app.id, mode: 'test', scopes: ['shipments:read'] }],
    });
    await expectRestGrantStands(company, rest);
    // Approving /mcp again replaces the /mcp grant's tokens only.
    const mcpAgain = await forMcp(company);
    expect((await listTools(w, mcp.access_token)).status).toBe(401);
    expect((await listTools(w, mcpAgain.access_token)).status).toBe(200);
    expect((await call(w, 'GET', '/v1/shipments', { token: rest.access_token })).status).toBe(200);
  });

  /** Both grants of the app on one company, each answering on its own resource. */
  async function bothGrants(company: CompanyFixture) {
    const rest = await forRest(company);
    const mcp = await forMcp(company);
    expect((await call(w, 'GET', '/v1/shipments', { token: rest.access_token })).status).toBe(200);
    expect((await listTools(w, mcp.access_token)).status).toBe(200);
    return { rest, mcp };
  }

  const refresh = (refreshToken: string) =>
    oauth.refreshTokenGrantRequest(
      as,
      { client_id: client.clientId },
      clientAuthOf(client),
      refreshToken,
      insecure,
    );

  it('an uninstall ends the /mcp grant too, before app.uninstalled is sent (CONTRACT.md, Trust 3)', async () => {
    const company = await createCompany(w, 'Leaving Whole');
    const { rest, mcp } = await bothGrants(company);
    // What the app finds when app.uninstalled arrives: both of its tokens already refused.
    const atArrival: number[] = [];
    appEvents.answer = (_m, res) => {
      void Promise.all([
        call(w, 'GET', '/v1/shipments', { token: rest.access_token }).then((r) => r.status),
        listTools(w, mcp.access_token).then((r) => r.status),
      ]).then((statuses) => {
        atArrival.push(...statuses);
        res.end('ok');
      });
    };
    const before = appEvents.received.length;
    const removed = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/installations/${rest.installation_id}`,
      { token: company.owner.token },
    );
    expect(removed.status, removed.text).toBe(204);
    expect((await call(w, 'GET', '/v1/shipments', { token: rest.access_token })).status).toBe(401);
    expect((await listTools(w, mcp.access_token)).status).toBe(401);
    for (const token of [rest.refresh_token, mcp.refresh_token]) {
      expect((await refresh(token as string)).status).toBe(400);
    }
    expect(await grantsOf(company)).toEqual({ installations: [], connections: [] });
    await deliverAll();
    appEvents.answer = (_m, res) => res.end('ok');
    const sent = appEvents.received
      .slice(before)
      .map((m) => verifyReceived(m, app.events_secret, w.clock.now()) as Json);
    expect(sent.map((m) => m.type)).toEqual(['app.uninstalled']);
    expect(atArrival).toEqual([401, 401]);
  });

  it("an uninstall on one company leaves the app's grants on another company", async () => {
    const company = await createCompany(w, 'Kept Elsewhere');
    const { rest, mcp } = await bothGrants(company);
    const other = await createCompany(w, 'Not Touched');
    const untouched = await bothGrants(other);
    const removed = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/installations/${rest.installation_id}`,
      { token: company.owner.token },
    );
    expect(removed.status).toBe(204);
    expect((await listTools(w, mcp.access_token)).status).toBe(401);
    expect((await listTools(w, untouched.mcp.access_token)).status).toBe(200);
    expect((await call(w, 'GET', '/v1/shipments', { token: untouched.rest.access_token })).status).toBe(200);
  });

  it('a suspension refuses both grants at once, and reinstating restores both', async () => {
    const company = await createCompany(w, 'Suspended Both');
    const { rest, mcp } = await bothGrants(company);
    const moderate = (action: string) =>
      call(w, 'POST', `/v1/review/apps/${app.id}/${action}`, {
        token: reviewer.token,
        body: { reason: 'sends spam' },
      });
    expect((await moderate('suspend')).status).toBe(200);
    try {
      expect((await call(w, 'GET', '/v1/shipments', { token: rest.access_token })).status).toBe(401);
      expect((await listTools(w, mcp.access_token)).status).toBe(401);
      expect((await refresh(mcp.refresh_token as string)).status).toBe(401);
    } finally {
      expect((await moderate('reinstate')).status).toBe(200);
    }
    expect((await call(w, 'GET', '/v1/shipments', { token: rest.access_token })).status).toBe(200);
    expect((await listTools(w, mcp.access_token)).status).toBe(200);
  });

  it("a refresh token's reuse revokes its own grant and leaves the other resource's", async () => {
    const company = await createCompany(w, 'Reused Once');
    const { rest, mcp } = await bothGrants(company);
    expect((await refresh(mcp.refresh_token as string)).status).toBe(200);
    // A second use outside the grace window is a reuse: the /mcp grant's tokens all end.
    w.clock.advance(5 * 60_000);
    expect((await refresh(mcp.refresh_token as string)).status).toBe(400);
    expect((await listTools(w, mcp.access_token)).status).toBe(401);
    expect((await call(w, 'GET', '/v1/shipments', { token: rest.access_token })).status).toBe(200);
  });

  it("a privacy request reaches the app once, at its events URL, naming only its mode's shipments", async () => {
    const company = await createCompany(w, 'Privacy Once');
    const { rest } = await bothGrants(company);
    // An agent client approved too: it has no events URL and is told nothing.
    await mcpTokens(w, company);
    const email = 'grace@example.test';
    const live = await createShipment(w, company.liveToken, { recipient_email: email });
    await createShipment(w, company.testToken, { recipient_email: email });
    await deliverAll();
    const before = appEvents.received.length;
    const asked = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'data_request', recipient: { email } },
    });
    expect(asked.status, asked.text).toBe(201);
    await deliverAll();
    const told = appEvents.received
      .slice(before)
      .map((m) => verifyReceived(m, app.events_secret, w.clock.now()) as Json);
    expect(told.map((m) => [m.type, m.data.installation_id, m.data.shipment_ids])).toEqual([
      ['customer.data_request', rest.installation_id, [live.id]],
    ]);
  });
});
