import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp, type TestApp } from '../oauth/support.ts';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * The official MCP SDK client, unmodified, against a real Waybill: discovery from the 401, the code
 * flow with PKCE and `resource` (the consent page answered in Chromium), tools, the 403 step-up,
 * and the refusal after the company revokes the connection.
 */
describe.skipIf(!hasChromium)('the MCP SDK client against /mcp', () => {
  let w: TestWaybill;
  let browser: Browser;
  let receiver: Server;
  let company: CompanyFixture;
  let app: TestApp;
  const received: URL[] = [];
  const transcript: string[] = [];
  const log = (line: string) => transcript.push(line);

  beforeAll(async () => {
    w = await startWaybill();
    let port = 0;
    receiver = createServer((request, response) => {
      const url = new URL(request.url ?? '/', `http://127.0.0.1:${port}`);
      if (url.pathname === '/callback') received.push(url);
      response.end('You can close this page.');
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
    company = await createCompany(w);
    app = await registerApp(w, {
      kind: 'public',
      name: 'Desk Agent',
      scopes: ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'],
      redirectUris: [`http://127.0.0.1:${port}/callback`],
    });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    await w?.close();
    if (transcript.length > 0)
      writeFileSync(join(tmpdir(), 'waybill-mcp-transcript.txt'), `${transcript.join('\n')}\n`);
  });

  /** The agent's side: what an MCP host keeps, and the person answering the consent page in Chromium. */
  class BrowserProvider implements OAuthClientProvider {
    #tokens: OAuthTokens | undefined;
    /** Pre-registered (the app's id), or what registration answered. */
    #client: OAuthClientInformationMixed | undefined;
    constructor(client?: OAuthClientInformationMixed) {
      this.#client = client;
    }
    #verifier = '';
    code: string | null = null;
    /** The scope this client asks for the first time (it starts small); null: what the SDK chose. */
    firstScope: string | null = 'shipments:read';
    approve = true;
    /** Scopes the person also ticks on the consent page, beyond those asked (Trust 3). */
    alsoTick: string[] = [];
    /** A host that keeps its refresh token (the 1.x SDK then refreshes and never steps up). */
    keepsRefreshToken = false;
    authorizationUrls: URL[] = [];

    get redirectUrl() {
      return app.redirectUri;
    }
    get clientMetadata(): OAuthClientMetadata {
      return {
        client_name: 'Desk Agent',
        redirect_uris: [app.redirectUri],
        token_endpoint_auth_method: 'none',
        // A loopback redirect is a native app's (RFC 8252).
        application_type: 'native',
      } as OAuthClientMetadata;
    }
    clientInformation() {
      return this.#client;
    }
    saveClientInformation(client: OAuthClientInformationMixed) {
      this.#client = client;
    }
    tokens() {
      // This host keeps no refresh token: a wider grant always goes through the person.
      if (!this.#tokens) return undefined;
      if (this.keepsRefreshToken) return this.#tokens;
      const { refresh_token: _refresh, ...access } = this.#tokens;
      return access as OAuthTokens;
    }
    saveTokens(tokens: OAuthTokens) {
      this.#tokens = tokens;
    }
    saveCodeVerifier(verifier: string) {
      this.#verifier = verifier;
    }
    codeVerifier() {
      return this.#verifier;
    }
    state() {
      // Waybill requires state (spec 5.6); an MCP host that keeps it checks it on the way back.
      this.#state = randomUUID();
      return this.#state;
    }
    #state = '';
    get accessToken() {
      return this.#tokens?.access_token ?? '';
    }
    async redirectToAuthorization(url: URL) {
      this.authorizationUrls.push(new URL(url));
      if (!this.approve) return;
      if (this.firstScope) {
        url.searchParams.set('scope', this.firstScope);
        this.firstScope = null;
      }
      const context = await browser.newContext();
      await context.addCookies([{ name: 'waybill_session', value: company.owner.token, url: w.url }]);
      const page = await context.newPage();
      await page.goto(url.href);
      await page.getByRole('heading', { name: 'Connect Desk Agent' }).waitFor();
      log(
        `consent page: "${await page.getByRole('heading').first().textContent()}", mode ${await page.locator('input[name=mode]:checked').getAttribute('value')}`,
      );
      for (const scope of this.alsoTick) {
        await page.locator(`input[name=grant_scope][value="${scope}"]`).check();
      }
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.waitForURL(/\/callback\?/);
      const landed = new URL(page.url());
      await context.close();
      expect(landed.searchParams.get('iss')).toBe(w.url);
      expect(landed.searchParams.get('state')).toBe(this.#state);
      this.code = landed.searchParams.get('code');
    }
  }

  function rawMcp(token: string, message: unknown) {
    return fetch(`${w.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify(message),
    });
  }

  it('connects, finds a test shipment and never a live one, steps up for a write, and stops when revoked', async () => {
    const testShipment = await createShipment(w, company.testToken, {
      recipient_name: 'Grace Hopper',
      external_ref: 'order-1042',
    });
    const liveShipment = await createShipment(w, company.liveToken, {
      recipient_name: 'Grace Hopper',
      external_ref: 'order-1042',
    });
    const provider = new BrowserProvider({ client_id: app.clientId });
    const mcpUrl = new URL(`${w.url}/mcp`);

    // 1. The first request is refused with the challenge; the SDK discovers, and the person approves.
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'desk-agent', version: '1.0.0' }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );
    const asked = provider.authorizationUrls[0] as URL;
    expect(asked.searchParams.get('resource')).toBe(`${w.url}/mcp`);
    expect(asked.searchParams.get('code_challenge_method')).toBe('S256');
    log(
      `authorization request: resource=${asked.searchParams.get('resource')} scope=${asked.searchParams.get('scope')} (asked for shipments:read)`,
    );
    expect(provider.code).toMatch(/^atc_/);
    await first.finishAuth(provider.code as string);
    expect(provider.accessToken).toMatch(/^atk_test_/);
    log(`token: ${provider.accessToken.slice(0, 9)}... (test mode), scope ${provider.tokens()?.scope}`);

    const transport = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    const client = new Client({ name: 'desk-agent', version: '1.0.0' });
    await client.connect(transport);
    log(`connected: server ${client.getServerVersion()?.name} ${client.getServerVersion()?.version}`);

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'add_checkpoint',
      'get_shipment',
      'list_webhook_deliveries',
      'replay_webhook_delivery',
      'search_shipments',
      'update_shipment_status',
    ]);
    expect(tools.find((t) => t.name === 'get_shipment')?.annotations?.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === 'update_shipment_status')?.annotations?.readOnlyHint).toBe(false);
    log(`tools/list: ${tools.map((t) => t.name).join(', ')}`);

    // 2. The search sees the test shipment only: the token is for test data.
    const found = await client.callTool({ name: 'search_shipments', arguments: { query: 'order-1042' } });
    const page = found.structuredContent as { data: { id: string; livemode: boolean }[] };
    expect(page.data.map((s) => s.id)).toEqual([testShipment.id]);
    expect(page.data.map((s) => s.id)).not.toContain(liveShipment.id);
    log(
      `search_shipments {query: "order-1042"} -> ${JSON.stringify((found.content as { text: string }[])[0]?.text)}`,
    );
    const live = await client.callTool({ name: 'get_shipment', arguments: { id: liveShipment.id } });
    expect(live.isError).toBe(true);
    expect((live.structuredContent as { code: string }).code).toBe('shipment.not_found');
    const got = await client.callTool({
      name: 'get_shipment',
      arguments: { tracking_number: testShipment.tracking_number },
    });
    const rest = await call(w, 'GET', `/v1/shipments/${testShipment.id}`, { token: company.testToken });
    const { events, checkpoints, ...shipment } = got.structuredContent as {
      events: unknown[];
      checkpoints: unknown[];
    };
    // The REST answer's tracking_url (issue 52) is the one field the tool leaves out.
    expect({ ...shipment, tracking_url: rest.body.tracking_url }).toEqual(rest.body);
    expect(checkpoints).toEqual([]);
    expect(events.length).toBeGreaterThan(0);
    log(
      `get_shipment {tracking_number: "${testShipment.tracking_number}"} -> status ${rest.body.status}, ${events.length} event(s)`,
    );

    // 3. A write with a read-only grant: HTTP 403 with the challenge; the SDK asks for more.
    const challenged = await rawMcp(provider.accessToken, {
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'update_shipment_status', arguments: { id: testShipment.id, status: 'picked_up' } },
    });
    expect(challenged.status).toBe(403);
    expect(challenged.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="shipments:read shipments:write", resource_metadata="${w.url}/.well-known/oauth-protected-resource/mcp"`,
    );
    await expect(
      client.callTool({
        name: 'update_shipment_status',
        arguments: { id: testShipment.id, status: 'picked_up' },
      }),
    ).rejects.toThrow(UnauthorizedError);
    const stepUp = provider.authorizationUrls[1] as URL;
    expect(stepUp.searchParams.get('scope')?.split(' ').sort()).toEqual([
      'shipments:read',
      'shipments:write',
    ]);
    log(
      `update_shipment_status -> 403 insufficient_scope; step-up asks scope=${stepUp.searchParams.get('scope')}`,
    );
    await transport.finishAuth(provider.code as string);
    const moved = await client.callTool({
      name: 'update_shipment_status',
      arguments: { id: testShipment.id, status: 'picked_up' },
    });
    expect(moved.isError).toBeFalsy();
    expect((moved.structuredContent as { status: string }).status).toBe('picked_up');
    log(`update_shipment_status {status: "picked_up"} -> ${(moved.content as { text: string }[])[0]?.text}`);

    // A move the rules refuse is a tool result with Waybill's code, not a protocol error.
    const refused = await client.callTool({
      name: 'update_shipment_status',
      arguments: { id: testShipment.id, status: 'delivered' },
    });
    expect(refused.isError).toBe(true);
    expect((refused.structuredContent as { code: string }).code).toBe('shipment.invalid_transition');
    log(
      `update_shipment_status {status: "delivered"} -> isError, ${(refused.content as { text: string }[])[0]?.text}`,
    );
    const live2 = await call(w, 'GET', `/v1/shipments/${liveShipment.id}`, { token: company.liveToken });
    expect(live2.body.status).toBe('confirmed');

    // 4. The company revokes the connection: the token stops at once.
    // A grant for /mcp is an agent connection, the app's as any client's (migration 0067).
    const connections = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token: company.owner.token,
    });
    const connection = connections.body.data.find((c: { client_id: string }) => c.client_id === app.clientId);
    const revoked = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/agent-connections/${connection.id}`,
      {
        token: company.owner.token,
      },
    );
    expect(revoked.status).toBe(204);
    provider.approve = false;
    await expect(client.callTool({ name: 'search_shipments', arguments: {} })).rejects.toThrow(
      UnauthorizedError,
    );
    const raw = await rawMcp(provider.accessToken, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBe(
      `Bearer error="invalid_token", resource_metadata="${w.url}/.well-known/oauth-protected-resource/mcp", scope="shipments:read"`,
    );
    log(
      `after the company revoked the connection: ${raw.status}, WWW-Authenticate: ${raw.headers.get('www-authenticate')}`,
    );
    await client.close();
  });

  it('registers itself (RFC 7591) when it has no client id, then connects with the registered id', async () => {
    await createShipment(w, company.testToken, { recipient_name: 'Katherine Johnson' });
    const provider = new BrowserProvider();
    provider.firstScope = null;
    const mcpUrl = new URL(`${w.url}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'desk-agent', version: '1.0.0' }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );
    const clientId = provider.clientInformation()?.client_id as string;
    expect(clientId).toMatch(/^app_/);
    expect(clientId).not.toBe(app.clientId);
    const stored = await w.ctx.db
      .selectFrom('agent_clients')
      .select(['source', 'first_approved_at'])
      .where('app_id', '=', clientId)
      .executeTakeFirstOrThrow();
    expect(stored.source).toBe('registration');
    expect(stored.first_approved_at).not.toBeNull();
    log(`registration: client_id ${clientId.slice(0, 8)}...`);
    await first.finishAuth(provider.code as string);
    const client = new Client({ name: 'desk-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const found = await client.callTool({ name: 'search_shipments', arguments: { query: 'Katherine' } });
    expect((found.structuredContent as { data: unknown[] }).data).toHaveLength(1);
    await client.close();
  });

  it('writes after a consent that ticked shipments:write, though it asked to read only and never steps up', async () => {
    const shipment = await createShipment(w, company.testToken, { recipient_name: 'Mary Jackson' });
    const provider = new BrowserProvider({ client_id: app.clientId });
    provider.keepsRefreshToken = true;
    provider.alsoTick = ['shipments:write'];
    const mcpUrl = new URL(`${w.url}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'desk-agent', version: '1.0.0' }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );
    expect((provider.authorizationUrls[0] as URL).searchParams.get('scope')).toBe('shipments:read');
    await first.finishAuth(provider.code as string);
    // RFC 6749 3.3: the token response names the wider grant the person chose.
    expect(provider.tokens()?.scope?.split(' ').sort()).toEqual(['shipments:read', 'shipments:write']);
    expect(provider.tokens()?.refresh_token).toMatch(/^atr_/);
    const client = new Client({ name: 'desk-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const moved = await client.callTool({
      name: 'update_shipment_status',
      arguments: { id: shipment.id, status: 'picked_up' },
    });
    expect(moved.isError).toBeFalsy();
    expect((moved.structuredContent as { status: string }).status).toBe('picked_up');
    // One consent, no step-up: the person was asked once.
    expect(provider.authorizationUrls).toHaveLength(1);
    await client.close();
  });

  it('lists every /mcp scope on the consent page, those not asked for unticked', async () => {
    const context = await browser.newContext();
    try {
      await context.addCookies([{ name: 'waybill_session', value: company.owner.token, url: w.url }]);
      const page = await context.newPage();
      const url = new URL(`${w.url}/oauth/authorize`);
      for (const [k, v] of Object.entries({
        response_type: 'code',
        client_id: app.clientId,
        redirect_uri: app.redirectUri,
        scope: 'shipments:read',
        state: 'xyz',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        resource: `${w.url}/mcp`,
      }))
        url.searchParams.set(k, v);
      await page.goto(url.href);
      const boxes = await page.locator('input[name=grant_scope]').evaluateAll((inputs) =>
        inputs.map((i) => {
          const box = i as unknown as { value: string; checked: boolean };
          return [box.value, box.checked];
        }),
      );
      expect(boxes).toEqual([
        ['shipments:read', true],
        ['shipments:write', false],
        ['webhooks:read', false],
        ['webhooks:write', false],
      ]);
    } finally {
      await context.close();
    }
  });
});
