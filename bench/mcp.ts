#!/usr/bin/env node
// A get_shipment tool call through POST /mcp beside the same GET /v1/shipments/{id}, latency p50 and
// p99 at the same concurrency, against one Waybill (embedded database) in this process. The MCP side
// pays for what the protocol asks: a server and transport per request (stateless), JSON-RPC, the
// token's resource check, the company's agent_access, and the shipment's events.
//   npm run bench:mcp            (BENCH_REQUESTS, BENCH_CONNECTIONS to change the load)
import autocannon from 'autocannon';
import { mcpTokens } from '../test/mcp/support.ts';
import { createCompany, createShipment } from '../test/support/api.ts';
import { startWaybill } from '../test/support/harness.ts';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 2000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);

const w = await startWaybill();
const company = await createCompany(w);
const shipment = await createShipment(w, company.testToken, { recipient_name: 'Bench Recipient' });
const tokens = await mcpTokens(w, company);

async function run(name: string, options: Parameters<typeof autocannon>[0]) {
  await autocannon({ ...options, amount: Math.min(200, REQUESTS) }); // warm-up
  const result = await autocannon({ ...options, amount: REQUESTS, connections: CONNECTIONS });
  const bad = result.non2xx + result.errors;
  console.log(
    `${name.padEnd(44)} p50 ${String(result.latency.p50).padStart(4)} ms   p99 ${String(result.latency.p99).padStart(4)} ms   ${Math.round(result.requests.average)} req/s${bad ? `   ${bad} FAILED` : ''}`,
  );
}

console.log(`${REQUESTS} requests each, ${CONNECTIONS} connections, Waybill in this process (PGlite)`);
await run('GET /v1/shipments/{id} (test API key)', {
  url: `${w.url}/v1/shipments/${shipment.id}`,
  headers: { authorization: `Bearer ${company.testToken}` },
});
await run('POST /mcp tools/call get_shipment (atk_test_)', {
  url: `${w.url}/mcp`,
  method: 'POST',
  headers: {
    authorization: `Bearer ${tokens.access_token}`,
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-06-18',
  },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'get_shipment', arguments: { id: shipment.id } },
  }),
});
await w.close();
