import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountChoices, type CookieJar, formFields, signedInJar } from '../oauth/support.ts';
import { type CompanyFixture, createCompany, createShipment } from '../support/api.ts';
import { selfSignedCertificate } from '../support/certificate.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * Client ID Metadata Documents: an agent whose client_id is the https URL of its metadata, served
 * here on loopback (the URL guard lets 127.0.0.0/8 through in tests) with a certificate Waybill is
 * told to trust.
 */
/** What the error page says of any fetch that failed, whatever the cause (review finding I2). */
const UNFETCHABLE = 'it could not be fetched as a JSON document';

describe('client ID metadata documents', () => {
  let w: TestWaybill;
  let server: Server;
  let base: string;
  let company: CompanyFixture;
  const documents = new Map<string, { status?: number; headers?: Record<string, string>; body: string }>();
  /** How often each path was fetched. */
  const hits = new Map<string, number>();
  const redirectUri = 'http://127.0.0.1:47123/callback';

  beforeAll(async () => {
    const { cert, key } = selfSignedCertificate('cimd-');
    server = createServer({ key, cert }, (request, response) => {
      hits.set(request.url ?? '', (hits.get(request.url ?? '') ?? 0) + 1);
      const doc = documents.get(request.url ?? '');
      if (!doc) {
        response.writeHead(404).end();
        return;
      }
      response
        .writeHead(doc.status ?? 200, { 'content-type': 'application/json', ...doc.headers })
        .end(doc.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
    w = await startWaybill();
    w.ctx.outboundCa = cert;
    company = await createCompany(w);
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await w?.close();
  });

  const serve = (
    path: string,
    document: unknown,
    extra: { status?: number; headers?: Record<string, string> } = {},
  ) => {
    documents.set(path, {
      body: typeof document === 'string' ? document : JSON.stringify(document),
      ...extra,
    });
    return `${base}${path}`;
  };
  const stored = async () =>
    (
      await w.ctx.db
        .selectFrom('agent_clients')
        .select('app_id')
        .where('source', '=', 'metadata_document')
        .execute()
    ).length;

  function authorizeUrl(clientId: string, redirect = redirectUri) {
    return `/oauth/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirect,
      scope: 'shipments:read',
      state: 'state-1',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      resource: `${w.url}/mcp`,
    })}`;
  }

  it('refuses each bad document on the error page, a fetch that failed in one class whatever the cause (I2), never a redirect, and stores nothing', async () => {
    const good = (url: string) => ({
      client_id: url,
      client_name: 'Bad Agent',
      redirect_uris: [redirectUri],
    });
    const cases: [string, string][] = [
      [
        serve('/redirects.json', '', { status: 302, headers: { location: `${base}/elsewhere.json` } }),
        UNFETCHABLE,
      ],
      [serve('/slash.json', { ...good(`${base}/slash.json/`) }), 'client_id is not the URL'],
      [serve('/big.json', { ...good(`${base}/big.json`), padding: 'x'.repeat(70 * 1024) }), UNFETCHABLE],
      [serve('/not-json.json', 'client_name: nope'), UNFETCHABLE],
      [
        serve('/secret.json', {
          ...good(`${base}/secret.json`),
          token_endpoint_auth_method: 'client_secret_basic',
        }),
        'none',
      ],
      ['https://10.0.0.7/agent.json', 'private'],
    ];
    const jar = await signedInJar(w, company.owner);
    for (const [clientId, reason] of cases) {
      const page = await jar.fetch(authorizeUrl(clientId));
      expect(page.status, clientId).toBe(400);
      expect(page.headers.get('location')).toBeNull();
      expect(await page.text()).toContain(reason);
    }
    const other = serve('/other.json', {
      client_id: `${base}/other.json`,
      client_name: 'Other',
      redirect_uris: ['https://agent.example/cb'],
    });
    const page = await jar.fetch(authorizeUrl(other));
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('not among');
    // The one valid document is kept (cached); the refused ones are not.
    expect(await stored()).toBe(1);
  });

  it('shows who the client is and where it returns, with the loopback warning; caches within bounds', async () => {
    const clientId = serve(
      '/agent.json',
      { client_id: `${base}/agent.json`, client_name: 'Loop Agent', redirect_uris: [redirectUri] },
      {
        headers: { 'cache-control': 'max-age=999999' },
      },
    );
    const jar = await signedInJar(w, company.owner);
    // A loopback redirect on another port is the same redirect (RFC 8252).
    const page = await jar.fetch(authorizeUrl(clientId, 'http://127.0.0.1:50999/callback'));
    const text = await page.text();
    expect(page.status).toBe(200);
    expect(text).toContain('Connect Loop Agent');
    expect(text).toContain(`<strong>127.0.0.1:${new URL(base).port}</strong>`);
    expect(text).toContain('<strong>127.0.0.1:50999</strong>');
    expect(text).toContain('runs on a computer');
    const row = await w.ctx.db
      .selectFrom('agent_clients')
      .select('metadata_expires_at')
      .where('app_id', '=', clientId)
      .executeTakeFirstOrThrow();
    expect(row.metadata_expires_at?.getTime()).toBe(w.clock.now().getTime() + 24 * 3600_000);
  });

  it("checks a document's own redirect_uris as a registration's, and says why on the error page", async () => {
    w.clock.advance(2 * 60_000);
    const jar = await signedInJar(w, company.owner);
    for (const [name, bad] of [
      ['js', 'javascript:alert(document.cookie)'],
      ['data', 'data:text/html,<script>alert(1)</script>'],
      ['file', 'file:///etc/passwd'],
      ['http', 'http://evil.example/cb'],
    ] as const) {
      const clientId = serve(`/${name}-redirect.json`, {
        client_id: `${base}/${name}-redirect.json`,
        client_name: 'Sly Agent',
        redirect_uris: [bad],
      });
      const page = await jar.fetch(authorizeUrl(clientId, bad));
      expect(page.status, bad).toBe(400);
      expect(page.headers.get('location')).toBeNull();
      expect(await page.text()).toContain('one of its redirect_uris must use https');
    }
    // An app's own scheme is where the person is sent, in words, never an empty host.
    const scheme = serve('/scheme.json', {
      client_id: `${base}/scheme.json`,
      client_name: 'Scheme Agent',
      redirect_uris: ['com.example.agent:/oauth'],
    });
    const page = await jar.fetch(authorizeUrl(scheme, 'com.example.agent:/oauth'));
    const text = await page.text();
    expect(page.status).toBe(200);
    expect(text).toContain(
      'you are sent to <strong>an app on this device (com.example.agent: links)</strong>',
    );
    expect(text).not.toContain('<strong></strong>');
  });

  it("remembers a failure for a minute and names the reason's class, never the target's answer", async () => {
    w.clock.advance(2 * 60_000);
    const jar = await signedInJar(w, company.owner);
    const clientId = serve('/broken.json', 'upstream says: secret-internal-detail', { status: 503 });
    for (let i = 0; i < 3; i++) {
      const page = await jar.fetch(authorizeUrl(clientId));
      const text = await page.text();
      expect(page.status).toBe(400);
      expect(text).toContain(`metadata document cannot be used: ${UNFETCHABLE}`);
      expect(text).not.toContain('503');
      expect(text).not.toContain('secret-internal-detail');
    }
    expect(hits.get('/broken.json')).toBe(1);
    // A minute later it is fetched again (and works now).
    serve('/broken.json', { client_id: clientId, client_name: 'Mended Agent', redirect_uris: [redirectUri] });
    w.clock.advance(60_000);
    const page = await jar.fetch(authorizeUrl(clientId));
    expect(page.status).toBe(200);
    expect(hits.get('/broken.json')).toBe(2);
  });

  it('fetches nothing for a person signed out (I2), and at most 10 documents a minute for one address key', async () => {
    w.clock.advance(2 * 60_000);
    const document = (name: string) =>
      serve(`/${name}.json`, {
        client_id: `${base}/${name}.json`,
        client_name: `Agent ${name}`,
        redirect_uris: [redirectUri],
      });
    // Signed out: sent to sign in first, and the document is not fetched.
    for (let i = 0; i < 3; i++) {
      const page = await fetch(`${w.url}${authorizeUrl(document(`out-${i}`))}`, { redirect: 'manual' });
      expect(page.status).toBe(303);
      expect(page.headers.get('location')).toMatch(/^\/signin\?return_to=/);
      expect(hits.get(`/out-${i}.json`)).toBeUndefined();
    }
    const jar = await signedInJar(w, company.owner);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const page = await jar.fetch(authorizeUrl(document(`many-${i}`)));
      statuses.push(page.status);
      if (page.status === 429) expect(await page.text()).toContain('Too many client metadata documents');
    }
    expect(statuses).toEqual([...Array(10).fill(200), 429, 429]);
    expect(hits.get('/many-10.json')).toBeUndefined();
    w.clock.advance(60_000);
    expect((await jar.fetch(authorizeUrl(`${base}/many-10.json`))).status).toBe(200);
  });

  it('the MCP SDK client connects with its metadata document URL as client_id', async () => {
    const clientId = serve('/desk.json', {
      client_id: `${base}/desk.json`,
      client_name: 'Desk Agent (CIMD)',
      redirect_uris: [redirectUri],
      token_endpoint_auth_method: 'none',
    });
    await createShipment(w, company.testToken, { recipient_name: 'Mary Jackson' });
    let tokens: OAuthTokens | undefined;
    let client: OAuthClientInformationMixed | undefined;
    let verifier = '';
    let code = '';
    const jar: CookieJar = await signedInJar(w, company.owner);
    const provider: OAuthClientProvider = {
      redirectUrl: redirectUri,
      clientMetadataUrl: clientId,
      get clientMetadata(): OAuthClientMetadata {
        return {
          client_name: 'Desk Agent (CIMD)',
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: 'none',
        };
      },
      clientInformation: () => client,
      saveClientInformation: (info) => {
        client = info;
      },
      tokens: () => tokens,
      saveTokens: (t) => {
        tokens = t;
      },
      saveCodeVerifier: (v) => {
        verifier = v;
      },
      codeVerifier: () => verifier,
      state: () => 'cimd-state',
      redirectToAuthorization: async (url) => {
        expect(url.searchParams.get('client_id')).toBe(clientId);
        const page = await jar.fetch(`${url.pathname}${url.search}`);
        const text = await page.text();
        expect(text).toContain('Connect Desk Agent (CIMD)');
        const answer = await jar.postForm('/oauth/authorize', {
          ...formFields(text),
          account: accountChoices(text)[0] as string,
          decision: 'approve',
        });
        code = new URL(answer.headers.get('location') as string).searchParams.get('code') as string;
      },
    };
    const mcpUrl = new URL(`${w.url}/mcp`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    await expect(new Client({ name: 'desk', version: '1.0.0' }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );
    expect(client?.client_id).toBe(clientId);
    await first.finishAuth(code);
    const mcp = new Client({ name: 'desk', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const found = await mcp.callTool({ name: 'search_shipments', arguments: { query: 'Mary' } });
    expect((found.structuredContent as { data: unknown[] }).data).toHaveLength(1);
    await mcp.close();
  });
});
