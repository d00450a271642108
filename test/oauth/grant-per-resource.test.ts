import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp } from '../apps/fixtures.ts';
import { testWorker } from '../delivery/support.ts';
import { listTools } from '../mcp/support.ts';
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
  let app: Json;
  let client: TestApp;

  beforeAll(async () => {
    w = await startWaybill();
    as = await discover(w);
    developer = await signUpPerson(w, 'Store Developer');
    receiver = await startReceiver('/subscription');
    app = await registerApp(w, developer, { scopes: ['shipments:read', 'shipments:write'] });
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
});
