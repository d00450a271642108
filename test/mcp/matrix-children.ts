import { spawn } from 'node:child_process';
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

/**
 * The scopes of each authorization request this host made, as they arrived at Waybill. A request
 * belongs to the host whose test first used its client_id: the browser a host opened can still
 * load a consent page after the next host's test has begun.
 */
function scopesAsked(r: RecordingWaybill, host: string): string[] {
  const authorizes = r.records.filter((x) => x.method === 'GET' && x.path === '/oauth/authorize');
  const firstHost = new Map<string, string>();
  for (const x of authorizes)
    if (!firstHost.has(x.query.client_id ?? '')) firstHost.set(x.query.client_id ?? '', x.host);
  return authorizes
    .filter((x) => firstHost.get(x.query.client_id ?? '') === host)
    .map((x) => (x.query.scope ?? '').split(' ').sort().join(' '));
}

const READ = 'shipments:read';
const READ_WRITE = 'shipments:read shipments:write';
const EVERY = 'shipments:read shipments:write webhooks:read webhooks:write';

/**
 * mcp-remote between a stdio host (the v1 SDK client here, as Claude Desktop is) and /mcp.
 * `firstScope`: what a host asks at its first authorize (0.15 takes the 401's; 0.1.37 and the
 * Inspector every scope the metadata lists, so they never step up: the person must untick).
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

/** One run of a command to its end: exit code and output. */
function runToEnd(command: string, args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * The MCP Inspector's CLI (`npx @modelcontextprotocol/inspector --cli URL --method ...`): one
 * process a call, its OAuth state kept in a file under HOME between them (no keychain here); it opens the browser itself once
 * told it may without a terminal (MCP_AUTO_OPEN_ENABLED=true).
 */
function inspectorCli(name: string, firstScope: string): ChildHost {
  return {
    name,
    async run({ r, company, order }) {
      const person = personAt(r, company);
      const callback = `http://127.0.0.1:${await freePort()}/oauth/callback`;
      const launcher = join(
        ROOT,
        'node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js',
      );
      const cli = async (...args: string[]) => {
        const result = await runToEnd(
          process.execPath,
          [launcher, '--cli', `${r.w.url}/mcp`, '--callback-url', callback, '--format', 'json', ...args],
          { ...person.env, MCP_AUTO_OPEN_ENABLED: 'true', MCP_INSPECTOR_SECRET_STORE: 'file' },
        );
        return result;
      };
      const call = (tool: string, args: Record<string, unknown>) =>
        cli('--method', 'tools/call', '--tool-name', tool, '--tool-args-json', JSON.stringify(args));

      const listed = await cli('--method', 'tools/list');
      expect(listed.code, listed.stderr).toBe(0);
      expect(scopesAsked(r, name)).toEqual([firstScope]);
      expect(listed.stdout).toMatch(/"name":\s*"get_shipment"/);
      const read = await call('get_shipment', { id: order });
      expect(read.code, read.stderr).toBe(0);
      expect(read.stdout).toMatch(/"status":\s*"confirmed"/);

      const moved = await call('update_shipment_status', { id: order, status: 'picked_up' });
      writeFileSync(join(tmpdir(), 'waybill-matrix-inspector.log'), `${moved.stdout}\n${moved.stderr}`);
      expect(moved.code, moved.stderr).toBe(0);
      expect(moved.stdout).toMatch(/"status":\s*"picked_up"/);
      expect(scopesAsked(r, name)).toEqual(firstScope === READ ? [READ, READ_WRITE] : [firstScope]);

      await revokeConnection(r.w, company);
      person.decide('deny');
      const refused = await call('get_shipment', { id: order });
      expect(refused.code).not.toBe(0);
    },
  };
}

export const childHosts: ChildHost[] = [
  mcpRemote('mcp-remote 0.15 (latest)', 'mcp-remote', READ),
  mcpRemote('mcp-remote 0.1.37', 'mcp-remote-0137', EVERY),
  // The Inspector asks for every scope the metadata lists, whatever the 401 names.
  inspectorCli('MCP Inspector CLI 2.12', EVERY),
];
