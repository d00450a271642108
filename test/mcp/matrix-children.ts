import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { expect } from 'vitest';
import type { CompanyFixture } from '../support/api.ts';
import { freePort } from '../support/harness.ts';
import type { Decision } from './consent.ts';
import { type RecordingWaybill, revokeConnection } from './hosts.ts';

/**
 * The hosts of the client matrix that run as child processes, unmodified: mcp-remote (the stdio
 * bridge desktop hosts start) at its latest and at 0.1.37, and the MCP Inspector CLI. Each opens the
 * authorization URL with the `open` package, whose xdg-open runs $BROWSER: consent-browser.ts, a
 * headless Chromium where the company's owner answers.
 */
export interface ChildHost {
  name: string;
  run(options: { r: RecordingWaybill; company: CompanyFixture; order: string }): Promise<void>;
}

const HERE = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(HERE, '..', '..');

/** A scratch folder with the BROWSER script and the person's answer for the next consent. */
function personAt(r: RecordingWaybill, company: CompanyFixture) {
  const dir = mkdtempSync(join(tmpdir(), 'waybill-matrix-'));
  const decisionFile = join(dir, 'decision');
  const browser = join(dir, 'browser.sh');
  writeFileSync(
    browser,
    `#!/bin/sh\nexec "${process.execPath}" "${join(HERE, 'consent-browser.ts')}" "$1"\n`,
    {
      mode: 0o755,
    },
  );
  writeFileSync(decisionFile, 'approve');
  const consentLog = join(dir, 'consent.log');
  writeFileSync(consentLog, '');
  return {
    dir,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      BROWSER: browser,
      WAYBILL_CONSENT_SESSION: company.owner.token,
      WAYBILL_CONSENT_BASE_URL: r.w.url,
      WAYBILL_CONSENT_DECISION: decisionFile,
      WAYBILL_CONSENT_LOG: consentLog,
    },
    decide(decision: Decision) {
      writeFileSync(decisionFile, decision);
    },
  };
}

/** The scopes of each authorization request this host made, as they arrived at Waybill. */
function scopesAsked(r: RecordingWaybill, host: string): string[] {
  return r.records
    .filter((x) => x.host === host && x.method === 'GET' && x.path === '/oauth/authorize')
    .map((x) => (x.query.scope ?? '').split(' ').sort().join(' '));
}

const READ = 'shipments:read';
const READ_WRITE = 'shipments:read shipments:write';
const EVERY = 'shipments:read shipments:write webhooks:read webhooks:write';

/**
 * mcp-remote between a stdio host (the v1 SDK client here, as Claude Desktop is) and /mcp.
 * `firstScope`: what it asks at its first authorize (0.15 takes the 401's, 0.1.37 every scope the
 * metadata lists, so it never needs to step up).
 */
function mcpRemote(name: string, proxy: string, firstScope: string): ChildHost {
  return {
    name,
    async run({ r, company, order }) {
      const person = personAt(r, company);
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [
          join(ROOT, 'node_modules', proxy, 'dist', 'proxy.js'),
          `${r.w.url}/mcp`,
          String(await freePort()),
        ],
        env: { ...person.env, MCP_REMOTE_CONFIG_DIR: join(person.dir, 'mcp-auth') },
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const client = new Client({ name: 'matrix-desktop-host', version: '1.0.0' });
      try {
        await client.connect(transport);
        expect(scopesAsked(r, name), stderr).toEqual([firstScope]);
        const { tools } = await client.listTools();
        expect(tools.map((t) => t.name)).toContain('get_shipment');
        const read = await client.callTool({ name: 'get_shipment', arguments: { id: order } });
        expect(read.isError, JSON.stringify(read)).toBeFalsy();
        expect((read.structuredContent as { status: string }).status).toBe('confirmed');

        // The first write: a host that started with shipments:read steps up through the browser.
        const moved = await client.callTool({
          name: 'update_shipment_status',
          arguments: { id: order, status: 'picked_up' },
        });
        expect((moved.structuredContent as { status: string } | undefined)?.status, stderr).toBe('picked_up');
        expect(scopesAsked(r, name)).toEqual(firstScope === READ ? [READ, READ_WRITE] : [firstScope]);

        // Revoked by the company; the owner does not approve it again.
        await revokeConnection(r.w, company);
        person.decide('deny');
        const refused = await client
          .callTool({ name: 'get_shipment', arguments: { id: order } })
          .catch((error: Error) => ({ isError: true, error: String(error) }));
        expect(refused.isError).toBe(true);
      } finally {
        await client.close();
      }
    },
  };
}

export const childHosts: ChildHost[] = [
  mcpRemote('mcp-remote 0.15 (latest)', 'mcp-remote', READ),
  mcpRemote('mcp-remote 0.1.37', 'mcp-remote-0137', EVERY),
];
