#!/usr/bin/env node
// A get_shipment tool call through POST /mcp beside the same GET /v1/shipments/{id}, latency p50 and
// p99 at the same concurrency, against one Waybill (embedded database) in this process. The MCP side
// pays for what the protocol asks: JSON-RPC, the SDK's per-request server (stateless), the token's
// resource check, the company's agent_access, and the shipment's events, which the REST call leaves
// out. Both protocol eras: 2025-06-18 (plain JSON-RPC after initialize) and 2026-07-28 (each request
// carries its envelope), the latter exactly as the official v2 client sends it.
//   npm run bench:mcp            (BENCH_REQUESTS, BENCH_CONNECTIONS to change the load)
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import autocannon from 'autocannon';
import { mcpTokens } from '../test/mcp/support.ts';
import { createCompany, createShipment } from '../test/support/api.ts';
import { startWaybill } from '../test/support/harness.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const GOAL = 1.5;

const w = await startWaybill();
const company = await createCompany(w);
const shipment = await createShipment(w, company.testToken, { recipient_name: 'Bench Recipient' });
const tokens = await mcpTokens(w, company);
const getShipment = { name: 'get_shipment', arguments: { id: shipment.id } };

/** The tools/call request the v2 client sends at 2026-07-28: its headers and body, replayed as they are. */
async function modernRequest(): Promise<{ headers: Record<string, string>; body: string }> {
  let captured: { headers: Record<string, string>; body: string } | null = null;
  const transport = new StreamableHTTPClientTransport(new URL(`${w.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } },
    fetch: async (url, init) => {
      const body = typeof init?.body === 'string' ? init.body : '';
      if (body.includes('"tools/call"'))
        captured = { headers: Object.fromEntries(new Headers(init?.headers).entries()), body };
      return fetch(url, init);
    },
  });
  const client = new Client(
    { name: 'bench', version: '1.0.0' },
    { versionNegotiation: { mode: { pin: '2026-07-28' } } },
  );
  await client.connect(transport);
  const result = await client.callTool(getShipment);
  if (result.isError || !captured)
    throw new Error(`get_shipment at 2026-07-28 failed: ${JSON.stringify(result)}`);
  await client.close();
  return captured;
}

interface Line {
  name: string;
  p50: number;
  p99: number;
}

async function run(name: string, options: Parameters<typeof autocannon>[0]): Promise<Line> {
  await autocannon({ ...options, amount: Math.min(200, REQUESTS) }); // warm-up
  const result = await autocannon({ ...options, amount: REQUESTS, connections: CONNECTIONS });
  const bad = result.non2xx + result.errors;
  console.log(
    `${name.padEnd(48)} p50 ${String(result.latency.p50).padStart(4)} ms   p99 ${String(result.latency.p99).padStart(4)} ms   ${Math.round(result.requests.average)} req/s${bad ? `   ${bad} FAILED` : ''}`,
  );
  return { name, p50: result.latency.p50, p99: result.latency.p99 };
}

console.log(`${REQUESTS} requests each, ${CONNECTIONS} connections, Waybill in this process (PGlite)`);
const rest = await run('GET /v1/shipments/{id} (test API key)', {
  url: `${w.url}/v1/shipments/${shipment.id}`,
  headers: { authorization: `Bearer ${company.testToken}` },
});
const legacy = await run('POST /mcp get_shipment, 2025-06-18 (atk_test_)', {
  url: `${w.url}/mcp`,
  method: 'POST',
  headers: {
    authorization: `Bearer ${tokens.access_token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: getShipment }),
});
const captured = await modernRequest();
const modern = await run('POST /mcp get_shipment, 2026-07-28 (v2 client)', {
  url: `${w.url}/mcp`,
  method: 'POST',
  headers: captured.headers,
  body: captured.body,
});
for (const line of [legacy, modern]) {
  const ratio = line.p99 / rest.p99;
  console.log(
    `${line.name}: p99 ${ratio.toFixed(2)} x REST (goal at most ${GOAL}), ${ratio <= GOAL ? 'met' : 'MISSED'}`,
  );
}
await w.close();
