import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../http/expect.ts';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { listTools } from './support.ts';

/**
 * CONTRACT.md, Trust 3 (headless agents): an API token with audience `mcp` works only at `/mcp`,
 * in its mode and with its scopes, is listed with the agent connections and revoked there; the
 * official SDK client sends it as `Authorization: Bearer ...`, as mcp-remote's `--header` does.
 */
describe('API tokens for agents (audience mcp)', () => {
  let w: TestWaybill;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w, 'Headless Co');
  });
  afterAll(async () => {
    await w?.close();
  });

  const makeToken = (body: Record<string, unknown>) =>
    call(w, 'POST', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
      body: { name: 'CI agent', mode: 'test', scopes: ['shipments:read', 'shipments:write'], ...body },
    });

  async function sdkClient(token: string): Promise<Client> {
    const transport = new StreamableHTTPClientTransport(new URL(`${w.url}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    });
    const client = new Client({ name: 'headless-agent', version: '1.0.0' });
    await client.connect(transport);
    return client;
  }

  it('works at /mcp with its mode and scopes, and is 401 at /v1; a /v1 token is 401 at /mcp', async () => {
    const made = await makeToken({ audience: 'mcp' });
    expect(made.status, made.text).toBe(201);
    expect(made.body.audience).toBe('mcp');
    const token = made.body.token as string;
    expect((await call(w, 'GET', '/v1/shipments', { token })).status).toBe(401);
    expect((await listTools(w, company.testToken)).status).toBe(401);

    const mine = await createShipment(w, company.testToken, { external_ref: 'order-77' });
    const live = await createShipment(w, company.liveToken, { external_ref: 'order-77' });
    const client = await sdkClient(token);
    try {
      const found = await client.callTool({ name: 'search_shipments', arguments: { query: 'order-77' } });
      expect((found.structuredContent as { data: Json[] }).data.map((s) => s.id)).toEqual([mine.id]);
      const hidden = await client.callTool({ name: 'get_shipment', arguments: { id: live.id } });
      expect(hidden.isError).toBe(true);
      const moved = await client.callTool({
        name: 'update_shipment_status',
        arguments: { id: mine.id, status: 'picked_up' },
      });
      expect(moved.isError, JSON.stringify(moved.content)).toBeFalsy();
    } finally {
      await client.close();
    }
    const after = await call(w, 'GET', `/v1/shipments/${mine.id}`, { token: company.testToken });
    expect(after.body.status).toBe('picked_up');
  });

  it('a read-only agent token is refused a write with the step-up challenge', async () => {
    const made = await makeToken({ audience: 'mcp', scopes: ['shipments:read'] });
    const shipment = await createShipment(w, company.testToken);
    const response = await fetch(`${w.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${made.body.token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'update_shipment_status', arguments: { id: shipment.id, status: 'picked_up' } },
      }),
    });
    expect(response.status).toBe(403);
  });

  it('is listed with the agent connections and revoked there, and ends at once', async () => {
    const made = await makeToken({ audience: 'mcp', name: 'Nightly triage' });
    const token = made.body.token as string;
    expect((await listTools(w, token)).status).toBe(200);
    const listed = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token: company.owner.token,
    });
    expect(listed.status).toBe(200);
    const entry = listed.body.data.find((c: Json) => c.id === made.body.id);
    expect(entry).toMatchObject({
      kind: 'api_token',
      client_id: null,
      client_name: 'Nightly triage',
      mode: 'test',
      scopes: ['shipments:read', 'shipments:write'],
    });
    // An API token for /v1 is no agent connection.
    const v1 = await makeToken({ name: 'Warehouse' });
    expect(v1.body.audience).toBe('v1');
    expect(listed.body.data.some((c: Json) => c.id === v1.body.id)).toBe(false);

    const revoked = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/agent-connections/${made.body.id}`,
      { token: company.owner.token },
    );
    expect(revoked.status).toBe(204);
    expect((await listTools(w, token)).status).toBe(401);
    const tokens = await call(w, 'GET', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
    });
    expect(tokens.body.data.find((t: Json) => t.id === made.body.id).revoked_at).not.toBeNull();
    const again = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/agent-connections/${made.body.id}`,
      { token: company.owner.token },
    );
    expectProblem(again, 404, 'agent_connection.not_found');
  });

  it('a live agent token works only while the company lets agents use live data', async () => {
    const made = await makeToken({ audience: 'mcp', mode: 'live' });
    const refused = await listTools(w, made.body.token);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { code: string }).code).toBe('mcp.disabled');
  });

  it('refuses an audience that is neither v1 nor mcp, and writes nothing', async () => {
    const before = await call(w, 'GET', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
    });
    const bad = await makeToken({ audience: 'both' });
    expect(bad.status).toBe(400);
    const after = await call(w, 'GET', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
    });
    expect(after.body.data.length).toBe(before.body.data.length);
  });
});
