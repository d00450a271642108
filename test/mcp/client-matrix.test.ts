import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Client as ClientV2,
  StreamableHTTPClientTransport as TransportV2,
  UnauthorizedError as UnauthorizedErrorV2,
} from '@modelcontextprotocol/client';
import { UnauthorizedError as UnauthorizedErrorV1 } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompanyFixture } from '../support/api.ts';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { answerConsent, type Decision } from './consent.ts';
import {
  callbackReceiver,
  demoLikeCompany,
  type RecordingWaybill,
  revokeConnection,
  startRecordingWaybill,
} from './hosts.ts';
import { childHosts } from './matrix-children.ts';

/**
 * The client matrix (issue 39): each MCP host, unmodified, registers, is approved by the owner in
 * Chromium, lists the tools, reads order 1042 with `shipments:read` only (the 401 names it), steps up
 * on its first write through the 403 challenge, and is refused once the company revokes it. What
 * each host sent at registration and authorize is recorded at Waybill's door and written to
 * $TMPDIR/waybill-mcp-hosts.md (docs/api.md, "Agents", keeps the table).
 */
const TOOL_NAMES = [
  'add_checkpoint',
  'get_shipment',
  'list_webhook_deliveries',
  'replay_webhook_delivery',
  'search_shipments',
  'update_shipment_status',
];

/** The agent's side of an SDK host: what it keeps, with no `state()` and no `application_type`. */
class HostProvider {
  #tokens: { access_token: string; scope?: string; refresh_token?: string } | undefined;
  #client: { client_id: string } | undefined;
  #verifier = '';
  decision: Decision = 'approve';
  code = '';
  /** Where the browser landed: the callback with code and iss. */
  callback: URL | null = null;
  authorizationUrls: URL[] = [];
  readonly browser: Browser;
  readonly person: { session: string; baseUrl: string };
  readonly redirectUrl: string;
  readonly name: string;
  constructor(
    browser: Browser,
    person: { session: string; baseUrl: string },
    redirectUrl: string,
    name: string,
  ) {
    this.browser = browser;
    this.person = person;
    this.redirectUrl = redirectUrl;
    this.name = name;
  }
  get clientMetadata() {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.#client;
  }
  saveClientInformation(client: { client_id: string }) {
    this.#client = client;
  }
  /** False: this host keeps no refresh token (the v1 SDK's step-up refreshes first, without scope). */
  keepsRefreshToken = true;
  tokens() {
    if (!this.#tokens || this.keepsRefreshToken) return this.#tokens;
    const { refresh_token: _refresh, ...access } = this.#tokens;
    return access;
  }
  saveTokens(tokens: { access_token: string; scope?: string }) {
    this.#tokens = tokens;
  }
  saveCodeVerifier(verifier: string) {
    this.#verifier = verifier;
  }
  codeVerifier() {
    return this.#verifier;
  }
  async redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(new URL(url));
    const landed = await answerConsent(this.browser, url.href, { ...this.person, decision: this.decision });
    this.callback = landed;
    this.code = landed.searchParams.get('code') ?? '';
  }
}

function rawMcp(url: string, token: string) {
  return fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
}

describe.skipIf(!hasChromium)('the MCP client matrix', { timeout: 240_000 }, () => {
  let r: RecordingWaybill;
  let browser: Browser;

  beforeAll(async () => {
    r = await startRecordingWaybill();
    browser = await launchChromium();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    if (r) writeFileSync(join(tmpdir(), 'waybill-mcp-hosts.md'), hostTable(r));
    await r?.close();
  });

  /** Registration and authorize as each host sent them, for the closing note. */
  function hostTable(recording: RecordingWaybill): string {
    const lines = ['| host | registration (POST /oauth/register) | authorize (query) |', '|---|---|---|'];
    for (const host of [...new Set(recording.records.map((x) => x.host))]) {
      const mine = recording.records.filter((x) => x.host === host);
      const registration = mine.find((x) => x.path === '/oauth/register')?.body ?? null;
      const authorizes = mine.filter((x) => x.method === 'GET' && x.path === '/oauth/authorize');
      const query = authorizes.map((a) => {
        const { code_challenge: _c, state, client_id: _id, ...rest } = a.query;
        return JSON.stringify({ ...rest, state: state === undefined ? '(none)' : '(sent)' });
      });
      lines.push(
        `| ${host} | \`${JSON.stringify(registration)}\` | ${query.map((q) => `\`${q}\``).join('<br>')} |`,
      );
    }
    return `${lines.join('\n')}\n`;
  }

  interface SdkClient {
    connect(transport: never): Promise<void>;
    listTools(): Promise<{ tools: { name: string }[] }>;
    callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
    close(): Promise<void>;
  }

  /** One SDK (v1 or v2) host through the whole story, as a host built on it drives it. */
  async function sdkHost(options: {
    host: string;
    transport(provider: HostProvider): { finishAuth(code: never): Promise<void> };
    /** What the host hands finishAuth: the code (v1) or the callback's parameters (v2, with iss). */
    callback(provider: HostProvider): unknown;
    client(): SdkClient;
    Unauthorized: new (...args: never[]) => Error;
    sendsApplicationType?: boolean;
    keepsRefreshToken?: boolean;
  }) {
    const { w } = r;
    r.host = options.host;
    const { company, order } = await demoLikeCompany(w);
    const receiver = await callbackReceiver();
    try {
      const provider = new HostProvider(
        browser,
        { session: company.owner.token, baseUrl: w.url },
        receiver.url,
        options.host,
      );
      provider.keepsRefreshToken = options.keepsRefreshToken ?? true;
      // 1. Refused, discovers, registers, and the owner approves what the 401 named.
      const first = options.transport(provider);
      await expect(options.client().connect(first as never)).rejects.toBeInstanceOf(options.Unauthorized);
      const asked = provider.authorizationUrls[0] as URL;
      expect(asked.searchParams.get('scope')).toBe('shipments:read');
      expect(asked.searchParams.get('resource')).toBe(`${w.url}/mcp`);
      expect(asked.searchParams.has('state')).toBe(false);
      expect(provider.code).toMatch(/^atc_/);
      const registration = r.records.find((x) => x.host === options.host && x.path === '/oauth/register');
      expect(registration?.body).toBeTruthy();
      if (!options.sendsApplicationType) expect(registration?.body).not.toHaveProperty('application_type');
      const clientId = provider.clientInformation()?.client_id as string;
      expect(clientId).toBeTruthy();
      await first.finishAuth(options.callback(provider) as never);

      // 2. Connected with shipments:read only: the tools, and order 1042.
      expect(provider.tokens()?.scope).toBe('shipments:read');
      const transport = options.transport(provider);
      const client = options.client();
      await client.connect(transport as never);
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(TOOL_NAMES);
      const found = (await client.callTool({
        name: 'search_shipments',
        arguments: { query: 'order-1042' },
      })) as { structuredContent: { data: { id: string }[] } };
      expect(found.structuredContent.data.map((s) => s.id)).toEqual([order]);
      const read = (await client.callTool({ name: 'get_shipment', arguments: { id: order } })) as {
        structuredContent: { status: string; events: unknown[] };
      };
      expect(read.structuredContent.status).toBe('confirmed');
      expect(read.structuredContent.events.length).toBeGreaterThan(0);

      // 3. The first write: 403 insufficient_scope, the host asks the owner for more, then writes.
      const move = { name: 'update_shipment_status', arguments: { id: order, status: 'picked_up' } };
      await expect(client.callTool(move)).rejects.toBeInstanceOf(options.Unauthorized);
      const stepUp = provider.authorizationUrls[1] as URL;
      expect(stepUp.searchParams.get('scope')?.split(' ').sort()).toEqual([
        'shipments:read',
        'shipments:write',
      ]);
      await transport.finishAuth(options.callback(provider) as never);
      expect(provider.tokens()?.scope?.split(' ').sort()).toEqual(['shipments:read', 'shipments:write']);
      const moved = (await client.callTool(move)) as { structuredContent: { status: string } };
      expect(moved.structuredContent.status).toBe('picked_up');

      // 4. The company revokes the connection: refused (the v1 SDK ends at the denied consent, the
      // v2 SDK at its refused refresh), and the owner does not approve again.
      await revokeConnection(w, company, clientId);
      provider.decision = 'deny';
      await expect(client.callTool({ name: 'get_shipment', arguments: { id: order } })).rejects.toThrow();
      const raw = await rawMcp(w.url, provider.tokens()?.access_token as string);
      expect(raw.status).toBe(401);
      expect(raw.headers.get('www-authenticate')).toContain('error="invalid_token"');
      await client.close();
    } finally {
      await receiver.close();
    }
  }

  it('the official SDK v1 client (no state(), no application_type)', async () => {
    await sdkHost({
      host: '@modelcontextprotocol/sdk 1.x',
      keepsRefreshToken: false,
      callback: (provider) => provider.code,
      Unauthorized: UnauthorizedErrorV1 as never,
      transport: (provider) =>
        new TransportV1(new URL(`${r.w.url}/mcp`), { authProvider: provider as never }),
      client: () => new ClientV1({ name: 'matrix-v1', version: '1.0.0' }) as never,
    });
  });

  it('the official SDK v2 client at 2026-07-28', async () => {
    await sdkHost({
      host: '@modelcontextprotocol/client 2.x',
      sendsApplicationType: true,
      callback: (provider) => provider.callback?.searchParams,
      Unauthorized: UnauthorizedErrorV2 as never,
      transport: (provider) =>
        new TransportV2(new URL(`${r.w.url}/mcp`), { authProvider: provider as never }),
      client: () =>
        new ClientV2(
          { name: 'matrix-v2', version: '1.0.0' },
          { versionNegotiation: { mode: { pin: '2026-07-28' } } },
        ) as never,
    });
    const mcpCalls = r.records.filter(
      (x) => x.host === '@modelcontextprotocol/client 2.x' && x.path === '/mcp',
    );
    expect(mcpCalls.some((x) => x.protocolVersion === '2026-07-28')).toBe(true);
  });

  for (const child of childHosts) {
    it(child.name, async () => {
      r.host = child.name;
      const { company, order } = await demoLikeCompany(r.w);
      await child.run({ r, company: company as CompanyFixture, order });
    });
  }
});
