import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasChromium, launchChromium } from '../support/browser.ts';
import { until } from '../support/eventually.ts';
import { engine, freePort } from '../support/harness.ts';

/**
 * Issue 53 item 9: the README's tour as a script, in its order, on a fresh database. The shell
 * blocks of "A five-minute tour" (with "The same over the API") and "Agents: connect an AI
 * assistant in a minute" run one command after another, as a newcomer types them, in a fresh
 * folder that holds the project (its package.json, src, scripts, node_modules) and nothing else:
 * `npm start` makes its embedded database in ./data there. Each placeholder (sk_test_..., app_...,
 * shp_..., whsec_...) is filled from what the earlier commands printed, so a step that only works
 * out of order fails here. A command annotated `# terminal N` is a terminal that stays open: it runs
 * in the background until the next command for the same terminal (Ctrl-C, SIGINT) or the end. The
 * steps done in a browser between blocks are done here through the API (as the reviewer) or in
 * Chromium (the owner's consent), right before the block that needs what they give.
 *
 * A block after `<!-- tour: not run: <why> -->` is not run and is reported.
 *
 * Only the README's `npm start` is under test: it runs on its embedded database whatever the
 * engine of the suite, so the file runs in the PGlite project only.
 */

const ROOT = new URL('../..', import.meta.url).pathname;
const SECTIONS = ['A five-minute tour', 'Agents: connect an AI assistant in a minute'];

interface Block {
  section: string;
  lang: string;
  text: string;
  /** The reason of a `<!-- tour: not run: ... -->` marker right before it. */
  skip: string | null;
}

/** The fenced blocks of the README's sections, in order, with the skip marker before each. */
function tourBlocks(readme: string): Block[] {
  const blocks: Block[] = [];
  let section = '';
  const lines = readme.split('\n');
  let pendingSkip: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    const heading = /^##\s+(.*)$/.exec(line);
    if (heading) {
      section = (heading[1] as string).trim();
      continue;
    }
    const marker = /^\s*<!--\s*tour:\s*not run:\s*(.*?)\s*-->\s*$/.exec(line);
    if (marker) {
      pendingSkip = marker[1] as string;
      continue;
    }
    const fence = /^(\s*)```(\w+)\s*$/.exec(line);
    if (fence) {
      const indent = (fence[1] as string).length;
      const body: string[] = [];
      for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i] as string); i++) {
        body.push((lines[i] as string).slice(indent));
      }
      if (SECTIONS.includes(section)) {
        blocks.push({ section, lang: fence[2] as string, text: body.join('\n'), skip: pendingSkip });
      }
      pendingSkip = null;
      continue;
    }
    if (line.trim() !== '') pendingSkip = null;
  }
  return blocks;
}

/**
 * A shell block cut into commands: a line continued by `\` or inside an open single-quoted string
 * belongs to the command before it; lines that are only a comment are dropped.
 */
function commandsOf(block: string): string[] {
  const commands: string[] = [];
  let current = '';
  for (const line of block.split('\n')) {
    if (current === '' && /^\s*(#.*)?$/.test(line)) continue;
    current = current === '' ? line : `${current}\n${line}`;
    const code = codeOf(current);
    const open = code.length === current.length && quoteOpen(current);
    if (!open && !/\\\s*$/.test(code)) {
      commands.push(current);
      current = '';
    }
  }
  if (current !== '') commands.push(current);
  return commands;
}

/** Where the command's trailing comment (the README's claim about it) starts, outside quotes. */
function commentStart(command: string): number {
  return scan(command).comment;
}

/** Whether a quote is still open at the end (the command goes on on the next line). */
function quoteOpen(command: string): boolean {
  return scan(command).quote !== null;
}

function scan(command: string): { comment: number; quote: string | null } {
  let quote: string | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(command[i - 1] as string)))
      return { comment: i, quote: null };
  }
  return { comment: command.length, quote };
}

const commentOf = (command: string) => command.slice(commentStart(command) + 1).trim();
/** The command without its comment: what decides how it runs. */
const codeOf = (command: string) => command.slice(0, commentStart(command));

interface Running {
  command: string;
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

describe.runIf(engine === 'pglite' && hasChromium)(
  "the README's tour, in its order, on a fresh database",
  () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    let project: string;
    let port: number;
    let receiverPort: number;
    let browser: Browser | undefined;
    /** Everything the commands and the browser steps printed, oldest first: the placeholders' source. */
    const printed: string[] = [];
    const terminals = new Map<string, Running>();
    const background: Running[] = [];
    /** Bare assignments (`TOKEN=...`, `export X=...`) run before every later command, as in one shell. */
    const assignments: string[] = [];
    const skipped: string[] = [];
    const ran: string[] = [];

    beforeAll(async () => {
      port = await freePort();
      receiverPort = await freePort();
      project = mkdtempSync(join(tmpdir(), 'waybill-tour-'));
      for (const entry of ['package.json', 'node_modules', 'src', 'scripts', 'tsconfig.json']) {
        symlinkSync(join(ROOT, entry), join(project, entry));
      }
      mkdirSync(join(project, 'home'));
    });

    afterAll(async () => {
      await browser?.close();
      for (const run of background) await stop(run);
      if (project) rmSync(project, { recursive: true, force: true });
      if (skipped.length > 0) console.log(`README tour: not run:\n${skipped.join('\n')}`);
    });

    const env = (): Record<string, string> => ({
      PATH: process.env.PATH ?? '',
      HOME: join(project, 'home'),
      XDG_CONFIG_HOME: join(project, 'home', 'config'),
      LANG: 'C.UTF-8',
      PORT: String(port),
      RECEIVER_PORT: String(receiverPort),
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      // npm must find nothing it would fetch: the tour needs no registry.
      npm_config_offline: 'true',
    });

    /** The README's ports are this run's free ones. */
    const localize = (text: string) =>
      text.replaceAll('localhost:3000', `localhost:${port}`).replaceAll(':4000', `:${receiverPort}`);

    /** The latest value printed that matches `pattern`'s first group. */
    function latest(pattern: RegExp, what: string): string {
      const global = new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`);
      for (let i = printed.length - 1; i >= 0; i--) {
        const matches = [...(printed[i] as string).matchAll(global)];
        const last = matches.at(-1);
        if (last) return last[1] as string;
      }
      throw new Error(`nothing printed so far gives ${what}`);
    }

    /** Each placeholder filled from what was printed before it. */
    function fill(text: string): string {
      return text
        .replace(/\b([a-z]+(?:_test|_live)?_)\.\.\./g, (_all, prefix: string) => {
          // A signing secret is base64 after its prefix; ids and keys are base64url.
          const chars = prefix === 'whsec_' ? '[A-Za-z0-9+/=]' : '[A-Za-z0-9_-]';
          return latest(new RegExp(`(?<![A-Za-z0-9])(${prefix}${chars}{16,})`), `${prefix}...`);
        })
        .replace(
          /code_verifier=\.\.\./g,
          () => `code_verifier=${latest(/code verifier\s+(\S+)/, 'the code verifier')}`,
        )
        .replace(/\{tenant_id\}/g, () => latest(/"tenant_id":"([^"]+)"/, 'a tenant_id'));
    }

    function spawnShell(command: string): Running {
      const child = spawn('bash', ['-c', [...assignments, command].join('\n')], {
        cwd: project,
        env: env(),
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
      });
      let output = '';
      child.stdout?.on('data', (chunk) => {
        output += chunk;
      });
      child.stderr?.on('data', (chunk) => {
        output += chunk;
      });
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      return { command, child, output: () => output, exited };
    }

    /** Ctrl-C in its terminal: SIGINT to the whole process group, then its exit. */
    async function stop(run: Running): Promise<void> {
      if (run.child.exitCode !== null || run.child.signalCode !== null) return;
      try {
        process.kill(-(run.child.pid as number), 'SIGINT');
      } catch {
        return;
      }
      const killed = setTimeout(() => {
        try {
          process.kill(-(run.child.pid as number), 'SIGKILL');
        } catch {}
      }, 20_000);
      await run.exited;
      clearTimeout(killed);
    }

    /** What a terminal that stays open prints once it is ready. */
    const READY: Array<[RegExp, RegExp]> = [
      [/\bnpm start\b/, /Waybill listening on/],
      [/\bnpm run receiver\b/, /Receiver listening on/],
      [/\bwaybill listen\b/, /whsec_[A-Za-z0-9+/=_-]{16,}/],
    ];

    async function startTerminal(terminal: string, command: string): Promise<void> {
      const earlier = terminals.get(terminal);
      if (earlier) {
        await stop(earlier);
        printed.push(earlier.output());
      }
      const ready = READY.find(([which]) => which.test(codeOf(command)))?.[1];
      if (!ready) throw new Error(`no way to tell when this terminal is ready: ${command}`);
      const run = spawnShell(command);
      terminals.set(terminal, run);
      background.push(run);
      // A terminal that closes before it is ready fails the step at once, with what it printed.
      const closed = run.exited.then((code) => {
        throw new Error(`${command}\nexited ${code} before it was ready:\n${run.output()}`);
      });
      closed.catch(() => {});
      await Promise.race([
        until(() => ready.test(run.output()), 120_000).catch(() => {
          throw new Error(`${command}\nnot ready in 120 s:\n${run.output()}`);
        }),
        closed,
      ]);
      printed.push(run.output());
    }

    /** The MCP client a host is: the bridge started by the command, asked what the tour asks. */
    async function driveMcpBridge(command: string): Promise<string> {
      const transport = new StdioClientTransport({
        command: 'bash',
        args: ['-c', [...assignments, command].join('\n')],
        cwd: project,
        env: env(),
        stderr: 'pipe',
      });
      let log = '';
      transport.stderr?.on('data', (chunk) => {
        log += chunk;
      });
      const client = new Client({ name: 'readme-tour', version: '1.0.0' });
      try {
        await client.connect(transport);
        const tools = (await client.listTools()).tools.map((tool) => tool.name);
        expect(tools).toContain('search_shipments');
        // "Where is order 1042?"
        const found = await client.callTool({ name: 'search_shipments', arguments: { query: '1042' } });
        const text = JSON.stringify(found);
        expect(text, log).toContain('"external_ref":"1042"');
        // "Such a token works only at /mcp (401 at /v1)".
        const agentToken = /WAYBILL_AGENT_TOKEN=(\S+)/.exec(assignments.join('\n'))?.[1];
        if (agentToken && command.includes('$WAYBILL_AGENT_TOKEN')) {
          const atV1 = await fetch(`http://localhost:${port}/v1/shipments`, {
            headers: { authorization: `Bearer ${agentToken}` },
          });
          expect(atV1.status).toBe(401);
        }
        return `${tools.join(',')}\n${text}`;
      } finally {
        await client.close();
      }
    }

    async function runCommand(raw: string): Promise<void> {
      // The comment is the README speaking: its placeholders are not to fill.
      const command = fill(localize(codeOf(raw))).trimEnd();
      const comment = commentOf(raw);
      ran.push(raw);
      const terminal = /\bterminal (\d+)/.exec(comment)?.[1];
      if (terminal) return startTerminal(terminal, command);
      if (/^(export\s+)?[A-Z_][A-Z0-9_]*=\S+\s*(#.*)?$/.test(command.trim())) {
        assignments.push(command);
        return;
      }
      if (/\bnpx mcp-remote\b/.test(command)) {
        printed.push(await driveMcpBridge(command));
        return;
      }
      const run = spawnShell(command);
      // `waybill login` asks for the e-mail and password the README gives beside it.
      const credentials = /(\S+@\S+)\s*\/\s*(\S+)/.exec(comment);
      run.child.stdin?.end(
        /\bwaybill login\b/.test(command) && credentials ? `${credentials[1]}\n${credentials[2]}\n` : '',
      );
      const code = await run.exited;
      const output = run.output();
      expect(code, `${raw}\n${output}`).toBe(0);
      printed.push(output);
      checkClaims(raw, comment, output);
    }

    /** What the README says a command answers, against what it answered. */
    function checkClaims(raw: string, comment: string, output: string): void {
      const said = `${raw}\n${output}`;
      if (/^\s*curl\b/.test(raw)) {
        expect(output.trim(), said).toMatch(/^[[{]/);
        const answer = JSON.parse(output) as Record<string, unknown>;
        expect(answer.type === undefined || !String(answer.type).includes('/problems/'), said).toBe(true);
        expect(answer.error, said).toBeUndefined();
        if (/grant_type=authorization_code/.test(raw)) expect(answer.access_token, said).toBeTypeOf('string');
      }
      if (/waybill app deploy --release/.test(raw))
        expect(output, said).toMatch(/Released version \d+: it is active/);
      else if (/waybill app deploy/.test(raw))
        expect(output, said).toMatch(/Created version \d+ \(apv_\w+\), draft/);
      const release = /waybill app release (\d+)/.exec(raw);
      if (release) expect(output, said).toContain(`Released version ${release[1]}: it is active`);
      // "3 active, 2 draft, 1 superseded": each version's line says so, and there are no others.
      const versions = [...comment.matchAll(/(\d+) (active|draft|superseded)/g)];
      if (/waybill app versions/.test(raw) && versions.length > 0) {
        const lines = output.split('\n').filter((line) => /^\s*\d+\s+\w+/.test(line));
        expect(lines, said).toHaveLength(versions.length);
        for (const [, number, status] of versions) {
          expect(output, said).toMatch(new RegExp(`^\\s*${number}\\s+${status}\\b`, 'm'));
        }
      }
    }

    /** Signs in through the API, as the pages' sign-in does. */
    async function session(email: string): Promise<string> {
      const answer = await fetch(`http://localhost:${port}/v1/auth/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'waybill-demo-1' }),
      });
      expect(answer.status).toBe(201);
      return ((await answer.json()) as { token: string }).token;
    }

    async function api(token: string, method: string, path: string, body?: unknown) {
      const answer = await fetch(`http://localhost:${port}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
      });
      const json = (await answer.json()) as Record<string, unknown>;
      expect(answer.status, JSON.stringify(json)).toBeLessThan(300);
      return json;
    }

    /**
     * Steps 2 to 4 in the dashboard, through the API: the owner moves the test shipment of Test
     * Recipient to picked_up, then in_transit; the listener prints a line per message and the
     * receiver, now checking signatures, prints each shipment.status_changed as valid.
     */
    async function changeTheTestShipment(): Promise<void> {
      const key = latest(/test API key\s+(sk_test_\S+)/, 'the test API key');
      const page = (await api(key, 'GET', '/v1/shipments?limit=100')) as {
        data: Array<{ id: string; recipient_name: string }>;
      };
      const shipment = page.data.find((s) => s.recipient_name === 'Test Recipient');
      if (!shipment) throw new Error('the demo has no test shipment for Test Recipient');
      for (const status of ['picked_up', 'in_transit']) {
        await api(key, 'POST', `/v1/shipments/${shipment.id}/status`, { status });
      }
      const receiver = terminals.get('2') as Running;
      const listener = terminals.get('3') as Running;
      await until(() => {
        const valid = receiver.output().match(/shipment\.status_changed .*\(signature valid\)/g) ?? [];
        return valid.length >= 2;
      }, 60_000).catch(() => {
        throw new Error(`the receiver:\n${receiver.output()}\nthe listener:\n${listener.output()}`);
      });
      expect(receiver.output()).toMatch(/picked_up -> in_transit \(signature valid\)/);
      expect(receiver.output()).not.toContain('INVALID');
      expect(listener.output()).toMatch(/shipment\.status_changed/);
    }

    /**
     * Step 7's browser part: the reviewer approves the waiting submission (through the review API the
     * console calls), then the owner opens the `install (demo)` link in Chromium, signs in and
     * approves; the browser lands on the app's callback with the code the next block exchanges.
     */
    async function reviewAndConsent(): Promise<void> {
      const reviewer = await session('reviewer@demo.waybill.test');
      const submissions = (await api(reviewer, 'GET', '/v1/review/submissions')) as {
        data: Array<{ id: string; status: string }>;
      };
      const waiting = submissions.data.find((s) => s.status === 'submitted');
      if (!waiting) throw new Error('no submission waits for the reviewer');
      await api(reviewer, 'POST', `/v1/review/submissions/${waiting.id}/start`);
      const decided = await api(reviewer, 'POST', `/v1/review/submissions/${waiting.id}/decision`, {
        decision: 'approved',
      });
      expect(decided.status).toBe('approved');

      browser ??= await launchChromium();
      const page = await browser.newPage();
      let callback = '';
      // Nothing listens on :8080 (the demo app has no server): the browser's arrival is the code.
      await page.route('http://localhost:8080/**', async (route) => {
        callback = route.request().url();
        await route.fulfill({ status: 200, body: 'the app would exchange the code now' });
      });
      await page.goto(latest(/install \(demo\)\s+(\S+)/, 'the install (demo) link'));
      await page.getByLabel('E-mail').fill('owner@demo.waybill.test');
      await page.getByLabel('Password').fill('waybill-demo-1');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Approve' }).click();
      await until(() => callback !== '', 30_000);
      await page.close();
      expect(new URL(callback).searchParams.get('code')).toMatch(/^atc_/);
      printed.push(callback);
    }

    /** What the browser steps do, and before which block (the first block that needs it). */
    const BEFORE: Array<[RegExp, () => Promise<void>]> = [
      [/WAYBILL_WEBHOOK_ALLOW_PRIVATE=/, changeTheTestShipment],
      [/grant_type=authorization_code/, reviewAndConsent],
    ];

    it('runs every shell block of the tour and the agents section, in order, each working', async () => {
      const blocks = tourBlocks(readme);
      expect(blocks.filter((b) => b.lang === 'sh').length).toBeGreaterThanOrEqual(5);
      for (const block of blocks) {
        const where = `${block.section}: ${block.text.split('\n')[0]}`;
        if (block.skip !== null) {
          skipped.push(`  ${where} (${block.skip})`);
          continue;
        }
        if (block.lang === 'toml') {
          // The file the block names in its first line, as the reader saves it.
          const name = /^#\s*(\S+\.toml)/.exec(block.text)?.[1];
          if (!name) throw new Error(`a toml block without its file name: ${where}`);
          writeFileSync(join(project, name), fill(block.text));
          continue;
        }
        if (block.lang !== 'sh') continue;
        for (const [when, step] of BEFORE) if (when.test(block.text)) await step();
        for (const command of commandsOf(block.text)) await runCommand(command);
      }
      // Every command of every block ran, none skipped silently.
      const expected = blocks
        .filter((b) => b.lang === 'sh' && b.skip === null)
        .flatMap((b) => commandsOf(b.text));
      expect(ran).toEqual(expected);
    }, 600_000);
  },
);

describe('reading the tour out of the README', () => {
  it("takes the sections' blocks in order, honours a not-run marker, cuts commands as a shell reads them", () => {
    const readme = [
      '## Two commands',
      '```sh',
      'npm test',
      '```',
      '## A five-minute tour',
      '1. **Start**:',
      '   ```sh',
      "   npm start   # terminal 1: it's on",
      '   npm run receiver',
      '   ```',
      '   <!-- tour: not run: needs a phone -->',
      '   ```sh',
      '   open-the-app',
      '   ```',
      '```sh',
      '# a comment alone',
      "curl -s localhost:3000/v1/x -H 'A: b' \\",
      '  -d \'{"a":',
      "       1}'",
      'TOKEN=sk_test_...   # a key',
      '```',
    ].join('\n');
    const blocks = tourBlocks(readme);
    expect(blocks.map((b) => [b.text.split('\n')[0], b.skip])).toEqual([
      ["npm start   # terminal 1: it's on", null],
      ['open-the-app', 'needs a phone'],
      ['# a comment alone', null],
    ]);
    expect(commandsOf((blocks[2] as Block).text)).toEqual([
      "curl -s localhost:3000/v1/x -H 'A: b' \\\n  -d '{\"a\":\n       1}'",
      'TOKEN=sk_test_...   # a key',
    ]);
    expect(commandsOf((blocks[0] as Block).text)).toEqual([
      "npm start   # terminal 1: it's on",
      'npm run receiver',
    ]);
    expect(commentOf("npm start   # terminal 1: it's on")).toBe("terminal 1: it's on");
    expect(codeOf('curl -d \'{"#":1}\' # the answer').trim()).toBe('curl -d \'{"#":1}\'');
  });
});
