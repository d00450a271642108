import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * What the MCP hosts of the client matrix send, and the person who answers their consent page.
 * Waybill runs behind a recording pass-through at its base URL (the issuer the hosts see), so what
 * each host sent at registration and authorize is read as it arrived, bytes unchanged.
 */

export interface Recorded {
  host: string;
  method: string;
  path: string;
  query: Record<string, string>;
  /** The JSON body of a registration, or the form of a token request (without secrets). */
  body: Record<string, unknown> | null;
  /** `MCP-Protocol-Version` of a request to /mcp. */
  protocolVersion: string | null;
}

export interface RecordingWaybill {
  w: TestWaybill;
  records: Recorded[];
  /** The host the requests from now on are recorded for. */
  host: string;
  close(): Promise<void>;
}

const RECORDED = new Set(['/oauth/register', '/oauth/authorize', '/oauth/token', '/mcp']);

function bodyOf(path: string, raw: string, type: string): Record<string, unknown> | null {
  if (!raw) return null;
  try {
    if (type.includes('json')) return JSON.parse(raw);
    if (path === '/oauth/token') {
      const form = Object.fromEntries(new URLSearchParams(raw));
      for (const secret of ['code', 'code_verifier', 'refresh_token', 'client_secret'])
        if (form[secret]) form[secret] = '…';
      return form;
    }
  } catch {}
  return null;
}

/**
 * A proxy forwards only end-to-end headers (RFC 9110, 7.6.1). Passing Waybill's `Keep-Alive:
 * timeout=72` on told a host the proxy's socket would stay open 72 s, while the proxy's own idle
 * timeout closed it after 5 s: a host that took longer than that in the browser had its next
 * request cut ("other side closed").
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-connection',
]);
function endToEndHeaders(raw: string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < raw.length; i += 2)
    if (!HOP_BY_HOP.has((raw[i] ?? '').toLowerCase())) kept.push(raw[i] ?? '', raw[i + 1] ?? '');
  return kept;
}

export async function startRecordingWaybill(): Promise<RecordingWaybill> {
  let target = 0;
  const state = { host: 'none', records: [] as Recorded[] };
  const proxy: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (RECORDED.has(url.pathname)) {
        const isMcp = url.pathname === '/mcp';
        state.records.push({
          host: state.host,
          method: req.method ?? 'GET',
          path: url.pathname,
          query: Object.fromEntries(url.searchParams),
          body: isMcp
            ? { method: (bodyOf('/mcp', raw.toString(), 'json') as { method?: string } | null)?.method }
            : bodyOf(url.pathname, raw.toString(), String(req.headers['content-type'] ?? '')),
          protocolVersion: (req.headers['mcp-protocol-version'] as string | undefined) ?? null,
        });
      }
      const forward = httpRequest(
        { host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, endToEndHeaders(answer.rawHeaders));
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      forward.end(raw);
    });
  });
  // Longer than any pause a host takes between two requests (a consent in Chromium on a loaded machine).
  proxy.keepAliveTimeout = 120_000;
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const port = (proxy.address() as AddressInfo).port;
  const w = await startWaybill({ env: { WAYBILL_BASE_URL: `http://localhost:${port}` } });
  target = (w.app.server.address() as AddressInfo).port;
  return {
    w,
    get records() {
      return state.records;
    },
    get host() {
      return state.host;
    },
    set host(name: string) {
      state.host = name;
    },
    async close() {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
      await w.close();
    },
  };
}

/** The company a host connects to: its owner (signed in in the browser) and test order 1042. */
export async function demoLikeCompany(w: TestWaybill): Promise<{ company: CompanyFixture; order: string }> {
  const company = await createCompany(w, 'Demo Parcels');
  const shipment = await createShipment(w, company.testToken, {
    recipient_name: 'Grace Hopper',
    external_ref: 'order-1042',
  });
  return { company, order: shipment.id };
}

/** The company's owner revokes the host's agent connection (by its client id, or its only one). */
export async function revokeConnection(
  w: TestWaybill,
  company: CompanyFixture,
  clientId?: string,
): Promise<string> {
  const list = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
    token: company.owner.token,
  });
  const connection = clientId
    ? list.body.data.find((c: { client_id: string }) => c.client_id === clientId)
    : list.body.data.length === 1
      ? list.body.data[0]
      : undefined;
  if (!connection) throw new Error(`no agent connection for ${clientId}: ${list.text}`);
  const deleted = await call(
    w,
    'DELETE',
    `/v1/companies/${company.tenantId}/agent-connections/${connection.id}`,
    { token: company.owner.token },
  );
  if (deleted.status !== 204) throw new Error(`revoke failed: ${deleted.text}`);
  return connection.id;
}

/** A loopback receiver for OAuth callbacks (what a host's redirect URI serves). */
export async function callbackReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_request, response) => response.end('You can close this page.'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/callback`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
