import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { mcpTokens } from './support.ts';

const run = promisify(execFile);
const CLI = 'node_modules/@modelcontextprotocol/conformance/dist/index.js';

/**
 * The MCP conformance suite's server scenarios that apply to Waybill's tools (it has no resources,
 * prompts, sampling or the suite's own test tools). The suite connects without OAuth, so a loopback
 * proxy adds an /mcp access token to each request and passes everything else through unchanged.
 */
const SCENARIOS = (process.env.MCP_CONFORMANCE_SCENARIOS?.split(',') ?? [
  'server-initialize',
  'ping',
  'tools-list',
]) as readonly string[];

describe('the MCP conformance suite against /mcp', () => {
  let w: TestWaybill;
  let proxy: Server;
  let proxyUrl: string;
  const results: string[] = [];

  beforeAll(async () => {
    w = await startWaybill();
    const company = await createCompany(w);
    await createShipment(w, company.testToken);
    const tokens = await mcpTokens(w, company);
    const target = new URL(w.url);
    proxy = createServer((incoming, outgoing) => {
      const forwarded = httpRequest(
        {
          host: '127.0.0.1',
          port: target.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...incoming.headers, host: target.host, authorization: `Bearer ${tokens.access_token}` },
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      forwarded.on('error', () => outgoing.destroy());
      incoming.pipe(forwarded);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve));
    await w?.close();
    if (results.length > 0)
      writeFileSync(join(tmpdir(), 'waybill-mcp-conformance.txt'), `${results.join('\n')}\n`);
  });

  for (const scenario of SCENARIOS) {
    it(`passes ${scenario}`, async () => {
      const out = mkdtempSync(join(tmpdir(), 'conformance-'));
      const { stdout } = await run(
        process.execPath,
        [CLI, 'server', '--url', proxyUrl, '--scenario', scenario, '-o', out],
        {
          timeout: 60_000,
        },
      ).catch((error: { stdout?: string; stderr?: string }) => ({
        stdout: `${error.stdout ?? ''}${error.stderr ?? ''}`,
      }));
      const checks = readdirSync(out, { recursive: true })
        .map(String)
        .filter((name) => name.endsWith('checks.json'))
        .flatMap(
          (name) =>
            JSON.parse(readFileSync(join(out, name), 'utf8')) as {
              id: string;
              status: string;
              errorMessage?: string;
            }[],
        );
      results.push(
        `${scenario}: ${checks.map((c) => `${c.id}=${c.status}`).join(', ') || stdout.slice(0, 300)}`,
      );
      expect(checks.length, stdout).toBeGreaterThan(0);
      expect(
        checks.filter((c) => c.status === 'FAILURE'),
        stdout,
      ).toEqual([]);
    });
  }
});
