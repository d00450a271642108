import { afterEach, describe, expect, it } from 'vitest';
import { engine } from '../support/harness.ts';
import { type Run, waitFor, waybill } from './support.ts';

/**
 * `waybill serve`'s log as a person on a terminal reads it (WAYBILL_LOG_FORMAT=pretty, what a
 * terminal gets unasked) and as a machine reads it (JSON: what a pipe gets unasked, or with
 * WAYBILL_LOG_FORMAT=json). The server runs as a child process, its stdout a pipe.
 */

const TIMEOUT = 90_000;
const PRIVATE_EMAIL = 'someone.private@customer.example';
const runs: Run[] = [];

afterEach(() => {
  for (const run of runs.splice(0)) if (run.child.exitCode === null) run.child.kill('SIGKILL');
});

/** A server on the embedded engine in memory, asked for one request that fails a sign-in. */
async function serveAndSignIn(env: Record<string, string>): Promise<Run> {
  const run = waybill(['serve'], {
    WAYBILL_DATABASE_URL: 'memory:',
    PORT: '0',
    WAYBILL_DEMO: '0',
    WAYBILL_LOG_LEVEL: 'info',
    ...env,
  });
  runs.push(run);
  const port = (await waitFor(run, /Waybill listening on http:\/\/localhost:(\d+)/))[1];
  const answer = await fetch(`http://127.0.0.1:${port}/v1/auth/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: PRIVATE_EMAIL, password: 'not the password' }),
  });
  expect(answer.status).toBe(401);
  return run;
}

describe.skipIf(engine === 'postgres')('the server log', () => {
  it(
    'WAYBILL_LOG_FORMAT=pretty: a line a person reads (time, level, message, request, status), no JSON',
    async () => {
      const run = await serveAndSignIn({ WAYBILL_LOG_FORMAT: 'pretty' });
      await waitFor(run, /^\d\d:\d\d:\d\d\.\d{3} INFO {2}request completed 401 \d+ ms \(req-1\)$/m);
      const out = run.stdout();
      expect(out).toMatch(
        /^\d\d:\d\d:\d\d\.\d{3} INFO {2}incoming request POST \/v1\/auth\/sessions \(req-1\)$/m,
      );
      // A long field is cut short: the 66-odd migration names are in the JSON, not on the terminal.
      expect(out).toMatch(
        /^\d\d:\d\d:\d\d\.\d{3} INFO {2}migrations applied applied=\["0001_accounts",.*\.\.\. \(\d+ items\)$/m,
      );
      expect(out.split('\n').filter((line) => line.startsWith('{'))).toEqual([]);
      expect(out).not.toContain('"level"');
      expect(out).not.toContain(PRIVATE_EMAIL);
      expect(run.stderr()).toBe('');
    },
    TIMEOUT,
  );

  it(
    'not a terminal, or WAYBILL_LOG_FORMAT=json: one JSON object a line, as before',
    async () => {
      const [piped, asked] = await Promise.all([
        serveAndSignIn({}),
        serveAndSignIn({ WAYBILL_LOG_FORMAT: 'json' }),
      ]);
      for (const run of [piped, asked]) {
        await waitFor(run, /"msg":"request completed"/);
        const logLines = run
          .stdout()
          .split('\n')
          .filter((line) => line.startsWith('{'))
          .map((line) => JSON.parse(line));
        expect(logLines).toContainEqual(
          expect.objectContaining({
            level: 30,
            msg: 'request completed',
            reqId: 'req-1',
            res: { statusCode: 401 },
          }),
        );
        expect(logLines).toContainEqual(
          expect.objectContaining({
            msg: 'incoming request',
            req: expect.objectContaining({ method: 'POST' }),
          }),
        );
        expect(run.stdout()).not.toContain(PRIVATE_EMAIL);
        expect(run.stdout()).not.toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO/m);
      }
    },
    TIMEOUT,
  );

  it('a format it does not know stops the start with a line naming the variable', async () => {
    const run = waybill(['serve'], {
      WAYBILL_DATABASE_URL: 'memory:',
      PORT: '0',
      WAYBILL_LOG_FORMAT: 'colour',
    });
    runs.push(run);
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toContain('WAYBILL_LOG_FORMAT must be json or pretty (got "colour")');
  });
});
