import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeInChild } from '../../src/db/pglite.ts';
import { DEMO_PASSWORD, DEMO_PEOPLE } from '../../src/seed.ts';
import type { Json } from '../support/api.ts';
import { engine } from '../support/harness.ts';
import { type Run, waitFor, waybill } from './support.ts';

const TIMEOUT = 90_000;

/** Runs `body` with a fresh folder of its own, removed afterwards. */
async function inTempFolder(body: (folder: string) => Promise<void>): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'waybill-cli-'));
  try {
    await body(folder);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** `waybill migrate` with `env`, which must succeed: its output. */
async function migrate(env: Record<string, string>): Promise<string> {
  const run = waybill(['migrate'], env);
  expect(await run.exited, run.stderr()).toBe(0);
  return run.stdout();
}

/** Connection refused means the server has stopped taking new connections: its shutdown began. */
async function untilRefused(port: number): Promise<void> {
  for (;;) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    if (refused) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

function readAll(socket: Socket): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
    });
    socket.on('close', () => resolve(text));
  });
}

describe.skipIf(engine === 'postgres')('the waybill command', () => {
  describe('serve', () => {
    let run: Run;
    let url: string;
    let port: number;

    beforeAll(async () => {
      run = waybill(['serve'], { WAYBILL_DATABASE_URL: 'memory:', PORT: '0', WAYBILL_DEMO: '1' });
      const match = await waitFor(run, /Waybill listening on (http:\/\/localhost:(\d+))/);
      url = match[1] as string;
      port = Number(match[2]);
    }, TIMEOUT);
    afterAll(() => {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    });

    it('prints the demo sign-ins and the real port it listens on', async () => {
      expect(port).toBeGreaterThan(0);
      expect(run.stdout()).toContain(DEMO_PEOPLE.owner.email);
      expect(run.stdout()).toContain(DEMO_PASSWORD);
      // The public address (the API's servers entry, the OAuth issuer) names the same port.
      const doc: Json = await (await fetch(`http://127.0.0.1:${port}/openapi.json`)).json();
      expect(doc.servers).toEqual([
        expect.objectContaining({
          url: '{base_url}',
          variables: { base_url: expect.objectContaining({ default: url }) },
        }),
      ]);
    });

    it('the demo owner signs in and sees the demo company', async () => {
      const session = await fetch(`http://127.0.0.1:${port}/v1/auth/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: DEMO_PEOPLE.owner.email, password: DEMO_PASSWORD }),
      });
      expect(session.status).toBe(201);
      const { token }: Json = await session.json();
      const me: Json = await (
        await fetch(`http://127.0.0.1:${port}/v1/me`, { headers: { authorization: `Bearer ${token}` } })
      ).json();
      expect(me.memberships).toEqual([expect.objectContaining({ role: 'owner', company_live: true })]);
    });

    it(
      'SIGTERM lets the request in flight finish, then exits 0',
      async () => {
        const body = JSON.stringify({ email: DEMO_PEOPLE.owner.email, password: DEMO_PASSWORD });
        const socket = connect(port, '127.0.0.1');
        await new Promise((resolve) => socket.once('connect', resolve));
        const answer = readAll(socket);
        // With Expect: 100-continue the server says "100 Continue" once it has taken the request
        // in: from then on it is in flight, and its body is still to come.
        const accepted = new Promise((resolve) => socket.once('data', resolve));
        socket.write(
          `POST /v1/auth/sessions HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`,
        );
        expect(String(await accepted)).toMatch(/^HTTP\/1\.1 100/);
        run.child.kill('SIGTERM');
        await untilRefused(port);
        socket.write(body);
        const response = await answer;
        expect(response).toMatch(/HTTP\/1\.1 201/);
        expect(response).toContain('"token":"ust_');
        // Its connection closes with the answer, so a keep-alive client does not hold up the exit.
        expect(response).toMatch(/\r\nconnection: close\r\n/i);
        expect(await run.exited).toBe(0);
      },
      TIMEOUT,
    );
  });

  describe('serve with a metrics port and a shutdown delay', () => {
    let run: Run;
    let publicUrl: string;
    let metricsUrl: string;

    beforeAll(async () => {
      run = waybill(['serve'], {
        WAYBILL_DATABASE_URL: 'memory:',
        PORT: '0',
        WAYBILL_DEMO: '0',
        WAYBILL_METRICS_PORT: '0',
        WAYBILL_SHUTDOWN_DELAY_SECONDS: '120',
      });
      metricsUrl = (await waitFor(run, /Waybill metrics on (http:\/\/[\d.:]+)\/metrics/))[1] as string;
      const port = (await waitFor(run, /Waybill listening on http:\/\/localhost:(\d+)/))[1];
      publicUrl = `http://127.0.0.1:${port}`;
    }, TIMEOUT);
    afterAll(() => {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
    });

    it('serves /metrics on the metrics port only', async () => {
      const metrics = await fetch(`${metricsUrl}/metrics`);
      expect(metrics.status).toBe(200);
      const text = await metrics.text();
      expect(text).toMatch(/^waybill_webhook_queue_depth\{state="due"\} 0$/m);
      expect(text).toMatch(/^waybill_process_resident_memory_bytes \d+/m);
      const onPublic = await fetch(`${publicUrl}/metrics`);
      expect(onPublic.status).toBe(404);
      expect(onPublic.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    });

    it(
      'on SIGTERM /readyz answers 503 at once while the process still serves; a second signal ends the wait',
      async () => {
        expect((await fetch(`${publicUrl}/readyz`)).status).toBe(200);
        run.child.kill('SIGTERM');
        await waitFor(run, /Waybill stopping: \/readyz answers 503, draining in 120 s/);
        for (const url of [publicUrl, metricsUrl]) {
          const ready = await fetch(`${url}/readyz`);
          expect(ready.status, url).toBe(503);
          expect(await ready.json()).toEqual({ status: 'not_ready', failed: ['shutting_down'] });
          expect((await fetch(`${url}/healthz`)).status, url).toBe(200);
        }
        // Still serving the API during the delay, for the requests the load balancer still sends.
        expect((await fetch(`${publicUrl}/openapi.json`)).status).toBe(200);
        run.child.kill('SIGTERM');
        expect(await run.exited).toBe(0);
      },
      TIMEOUT,
    );
  });

  it(
    'migrate works on a folder, twice; the first run creates the cluster in a child process, in place',
    async () => {
      await inTempFolder(async (folder) => {
        // What a first start killed halfway would have left: a build beside the folder, its process gone.
        const abandoned = join(folder, '.pglite.initdb-999999');
        mkdirSync(abandoned);
        writeFileSync(join(abandoned, 'PG_VERSION'), '17');
        for (let i = 0; i < 2; i++) {
          const output = await migrate({
            WAYBILL_DATABASE_URL: join(folder, 'pglite'),
            WAYBILL_LOG_LEVEL: 'info',
          });
          expect(output).toContain('Migrations are up to date');
          expect(output.includes('cluster created by initdb in a child process')).toBe(i === 0);
          expect(output).not.toContain('cluster to be created in this process');
        }
        expect(existsSync(join(folder, 'pglite', 'PG_VERSION'))).toBe(true);
        // The child builds beside the folder and renames into place: nothing of it, or of the
        // abandoned build, is left over.
        expect(readdirSync(folder).sort()).toEqual(['pglite', 'secret.key']);
      });
    },
    TIMEOUT,
  );

  it(
    'a folder whose parents do not exist yet is made, parents included',
    async () => {
      await inTempFolder(async (folder) => {
        const dataDir = join(folder, 'a', 'b', 'pglite');
        // With a key given, nothing else makes the parents (the key file would be beside the folder).
        const output = await migrate({
          WAYBILL_DATABASE_URL: dataDir,
          WAYBILL_SECRET_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
          WAYBILL_LOG_LEVEL: 'info',
        });
        expect(output).toContain('cluster created by initdb in a child process');
        expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
      });
    },
    TIMEOUT,
  );

  it(
    'two first starts at once on one folder: one makes the cluster, the other finds it and keeps its own out',
    async () => {
      await inTempFolder(async (folder) => {
        const dataDir = join(folder, 'pglite');
        // Both children build at once; whichever finishes second must not replace the first's cluster.
        const outcomes = await Promise.all([initializeInChild(dataDir), initializeInChild(dataDir)]);
        expect(outcomes.sort()).toEqual(['created', 'present']);
        expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(true);
        expect(readdirSync(folder)).toEqual(['pglite']);
      });
    },
    TIMEOUT,
  );

  it(
    'a folder that holds other files and no cluster is left as it is, and the cluster made in process',
    async () => {
      await inTempFolder(async (folder) => {
        mkdirSync(join(folder, 'pglite'));
        writeFileSync(join(folder, 'pglite', 'notes.txt'), 'mine');
        const output = await migrate({ WAYBILL_DATABASE_URL: join(folder, 'pglite') });
        expect(output).toContain('cluster to be created in this process');
        expect(output).toContain('the folder is not empty and holds no cluster');
        expect(readFileSync(join(folder, 'pglite', 'notes.txt'), 'utf8')).toBe('mine');
        expect(existsSync(join(folder, 'pglite', 'PG_VERSION'))).toBe(true);
      });
    },
    TIMEOUT,
  );

  it(
    'a bad configuration value stops the command with a message naming it',
    async () => {
      for (const [env, variable] of [
        [{ PORT: 'abc' }, 'PORT'],
        [{ PORT: '70000' }, 'PORT'],
        [{ WAYBILL_DATABASE_URL: 'mysql://x' }, 'WAYBILL_DATABASE_URL'],
        [{ WAYBILL_BASE_URL: 'ftp://example.test' }, 'WAYBILL_BASE_URL'],
        [{ WAYBILL_DEMO: 'yes' }, 'WAYBILL_DEMO'],
        [{ WAYBILL_METRICS_PORT: 'metrics' }, 'WAYBILL_METRICS_PORT'],
        [{ PORT: '4000', WAYBILL_METRICS_PORT: '4000' }, 'WAYBILL_METRICS_PORT'],
        [{ WAYBILL_SHUTDOWN_DELAY_SECONDS: '-1' }, 'WAYBILL_SHUTDOWN_DELAY_SECONDS'],
      ] as const) {
        const run = waybill(['serve'], { WAYBILL_DATABASE_URL: 'memory:', ...env });
        expect(await run.exited).not.toBe(0);
        expect(run.stderr()).toContain('Invalid configuration');
        expect(run.stderr()).toContain(variable);
        expect(run.stdout()).not.toContain('listening');
      }
    },
    TIMEOUT,
  );

  it('an unknown command exits non-zero with the usage', async () => {
    const run = waybill(['launch'], { WAYBILL_DATABASE_URL: 'memory:' });
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toContain('Usage: waybill');
  });
});
