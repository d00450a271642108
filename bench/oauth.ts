#!/usr/bin/env node
import { fork } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
// The OAuth token endpoint (authorization_code and refresh_token grants) and the metadata document,
// in requests per second, against Waybill and against node-oidc-provider in the same run, at the same
// concurrency. Every token request uses a fresh, pre-minted code or refresh token.
// node-oidc-provider runs twice: with an in-memory adapter, and with a PostgreSQL adapter of the
// benchmark's own (bench/oidc-provider-side.ts: one table, every write committed) as a production
// deployment runs it, on WAYBILL_BENCH_DATABASE_URL when set, else on WAYBILL_BENCH_PEERS_DATABASE_URL
// (default postgres://postgres@127.0.0.1:5432/bench); left out, said so, when no PostgreSQL answers.
//   npm run bench:oauth                       (Waybill on PGlite)
//   WAYBILL_BENCH_DATABASE_URL=postgres://... npm run bench:oauth   (Waybill on PostgreSQL)
import autocannon from 'autocannon';
import pg from 'pg';
import { freePort } from '../test/support/harness.ts';
import { ensureDatabase } from './peers/database.ts';
import { PostgresCpuMeter, ProcessCpuMeter, withAppName } from './peers/server-cpu.ts';
import type { TokenServer } from './waybill-side.ts';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
// The grants again with more clients at once: at 10, a side that commits each grant is bound by the
// commit's round trip rather than by CPU (docs/performance.md); 0 leaves the second pass out.
const BUSY_CONNECTIONS = Number(process.env.BENCH_BUSY_CONNECTIONS ?? 50);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 10000);
const WARMUP = 300;
const postgresUrl = process.env.WAYBILL_BENCH_DATABASE_URL;
const providerPostgresUrl =
  postgresUrl ?? process.env.WAYBILL_BENCH_PEERS_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench';

const verifier = randomBytes(32).toString('base64url');
const challenge = createHash('sha256').update(verifier).digest('base64url');

/** Requests per second for `amount` requests, each body taken from `next()`; fails loudly on any non-2xx. */
let failures = 0;
async function measure(
  url: string,
  path: string,
  amount: number,
  headers: Record<string, string>,
  next?: () => string,
  connections = CONNECTIONS,
) {
  const started = performance.now();
  let finished = started;
  const result = await autocannon({
    url,
    connections,
    amount,
    requests: [
      {
        method: next ? 'POST' : 'GET',
        path,
        headers,
        ...(next ? { setupRequest: (request) => ({ ...request, body: next() }) } : {}),
        onResponse: (status: number, body: string) => {
          finished = performance.now();
          if (status >= 300 && failures++ < 3) console.error(status, body);
        },
      },
    ],
  });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(
      `${url}${path}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  }
  // autocannon ends a run on its one-second tick; time from the start to the last answer instead.
  return result.requests.total / ((finished - started) / 1000);
}

/** A token side's rate, and the CPU each of its requests cost: its server process, its PostgreSQL. */
interface GrantFigures {
  rate: number;
  serverUs: number | null;
  databaseUs: number | null;
}

async function tokenGrant(
  side: Side,
  grant: 'authorization_code' | 'refresh_token',
  connections = CONNECTIONS,
): Promise<GrantFigures> {
  const headers = {
    'content-type': 'application/x-www-form-urlencoded',
    authorization: `Basic ${Buffer.from(`${side.clientId}:${side.clientSecret}`).toString('base64')}`,
  };
  // autocannon may build a few requests it never sends; spare grants keep every one fresh.
  const n = REQUESTS + WARMUP + 1 + connections * 4;
  const items =
    grant === 'authorization_code' ? await side.mintCodes(n, challenge) : await side.mintRefreshTokens(n);
  const body = (item: string) =>
    grant === 'authorization_code'
      ? new URLSearchParams({
          grant_type: grant,
          code: item,
          redirect_uri: side.redirectUri,
          code_verifier: verifier,
        }).toString()
      : new URLSearchParams({ grant_type: grant, refresh_token: item }).toString();
  let i = 0;
  const next = () => body(items[i++] as string);
  // One request by hand first, so a misconfigured side says why.
  const probe = await fetch(`${side.url}${side.tokenPath}`, { method: 'POST', headers, body: next() });
  if (probe.status !== 200) throw new Error(`${side.url}: ${probe.status} ${await probe.text()}`);
  await measure(side.url, side.tokenPath, WARMUP, headers, next, connections);
  const server = side.pid ? new ProcessCpuMeter(side.pid) : null;
  const database = side.appName ? postgresMeter : null;
  server?.start();
  await database?.start(side.appName as string);
  const rate = await measure(side.url, side.tokenPath, REQUESTS, headers, next, connections);
  const serverSeconds = server?.available ? server.stop().total : null;
  const databaseSeconds = database ? (await database.stop()).backends : null;
  const perRequest = (seconds: number | null) => (seconds === null ? null : (seconds * 1e6) / REQUESTS);
  return { rate, serverUs: perRequest(serverSeconds), databaseUs: perRequest(databaseSeconds) };
}

async function metadata(url: string, path: string): Promise<number> {
  await measure(url, path, WARMUP, {});
  return measure(url, path, REQUESTS * 3, {});
}

type Side = TokenServer & {
  metadataPath: string;
  pid: number | undefined;
  /** The application_name of its PostgreSQL connections (the CPU meter's key), when on PostgreSQL. */
  appName: string | null;
};

/** Starts one server in a child process (bench/side-process.ts) and talks to it over IPC. */
async function startSide(which: 'waybill' | 'oidc-provider' | 'oidc-provider-pg'): Promise<Side> {
  const url =
    which === 'oidc-provider-pg' ? providerPostgresUrl : which === 'waybill' ? postgresUrl : undefined;
  const appName = url ? `waybill-bench-oauth-${which}` : null;
  const child = fork(new URL('./side-process.ts', import.meta.url), [
    which,
    String(await freePort()),
    url && appName ? withAppName(url, appName) : '',
  ]);
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  const ask = <T>(message: Record<string, unknown>) =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      child.send({ id, ...message });
    });
  const info = await new Promise<Record<string, string>>((resolve, reject) => {
    child.once('exit', (code, signal) => {
      const gone = new Error(`${which} exited with ${code ?? signal}`);
      reject(gone);
      // Whatever was asked of it since is never answered: fail it rather than wait forever.
      for (const waiter of pending.values()) waiter.reject(gone);
      pending.clear();
    });
    child.on('message', (message: { ready?: boolean; id?: number; result?: unknown; error?: string }) => {
      if (message.ready) resolve(message as unknown as Record<string, string>);
      else if (message.id !== undefined) {
        const waiter = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) waiter?.reject(new Error(message.error));
        else waiter?.resolve(message.result);
      }
    });
  });
  return {
    url: info.url as string,
    tokenPath: info.tokenPath as string,
    metadataPath: info.metadataPath as string,
    clientId: info.clientId as string,
    clientSecret: info.clientSecret as string,
    redirectUri: info.redirectUri as string,
    mintCodes: (n, challenge) => ask<string[]>({ cmd: 'mintCodes', n, challenge }),
    mintRefreshTokens: (n) => ask<string[]>({ cmd: 'mintRefreshTokens', n }),
    close: () => ask<void>({ cmd: 'close' }),
    pid: child.pid,
    appName,
  };
}

/** synchronous_commit as the server runs it, or null when no PostgreSQL answers there. */
async function synchronousCommit(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ synchronous_commit: string }>('SHOW synchronous_commit');
    return rows[0]?.synchronous_commit ?? null;
  } catch {
    return null;
  } finally {
    await client.end().catch(() => {});
  }
}

const ours = await startSide('waybill');
const inMemory = await startSide('oidc-provider');
await ensureDatabase(providerPostgresUrl);
const commitMode = await synchronousCommit(providerPostgresUrl);
const onPostgres = commitMode
  ? await startSide('oidc-provider-pg').catch(async (error: unknown) => {
      await ours.close();
      await inMemory.close();
      throw error;
    })
  : null;
const engine = postgresUrl ? 'PostgreSQL' : 'PGlite';
// PostgreSQL's CPU for each side's own connections (application_name), when the server is readable here.
let postgresMeter: PostgresCpuMeter | null = null;
if (commitMode) {
  const meter = new PostgresCpuMeter(providerPostgresUrl);
  await meter.open();
  if (meter.available) postgresMeter = meter;
  else await meter.close();
}
const cell = (value: number | null) => (value === null ? '     -' : value.toFixed(0).padStart(6));
const ratio = (a: number, b: number | null) => (b === null ? '   -' : (a / b).toFixed(2));
const rateOf = (figures: number | GrantFigures) => (typeof figures === 'number' ? figures : figures.rate);
/** CPU µs per request of a side: its server process, plus its PostgreSQL backends when it has some. */
function cpuCell(figures: number | GrantFigures | null): string {
  if (figures === null || typeof figures === 'number' || figures.serverUs === null) return '-';
  const database = figures.databaseUs === null ? '' : ` + PostgreSQL ${figures.databaseUs.toFixed(0)}`;
  return `${figures.serverUs.toFixed(0)}${database} µs`;
}
async function row(label: string, measureSide: (side: Side) => Promise<number | GrantFigures>) {
  const a = await measureSide(ours);
  const b = await measureSide(inMemory);
  const c = onPostgres ? await measureSide(onPostgres) : null;
  const [ra, rb, rc] = [rateOf(a), rateOf(b), c === null ? null : rateOf(c)];
  console.log(
    `${label.padEnd(40)} Waybill ${cell(ra)}   oidc-provider memory ${cell(rb)}   oidc-provider PostgreSQL ${cell(rc)} req/s   Waybill/memory ${ratio(ra, rb)}   Waybill/PostgreSQL ${ratio(ra, rc)}`,
  );
  if (typeof a !== 'number') {
    console.log(
      `${'  CPU per request'.padEnd(40)} Waybill ${cpuCell(a)}   oidc-provider memory ${cpuCell(b)}   oidc-provider PostgreSQL ${cpuCell(c)}   (server process; PostgreSQL: the side's own backends)`,
    );
  }
}
try {
  console.log(
    `OAuth benchmark: Waybill on ${engine} vs node-oidc-provider (in memory, and on PostgreSQL at ${new URL(providerPostgresUrl).host}${new URL(providerPostgresUrl).pathname}), ${CONNECTIONS} connections (then ${BUSY_CONNECTIONS} for the grants), ${REQUESTS} requests each`,
  );
  console.log(
    onPostgres
      ? `oidc-provider's PostgreSQL adapter: one table, each write committed on its own, synchronous_commit = ${commitMode}`
      : `oidc-provider on PostgreSQL left out: no PostgreSQL answered at ${new URL(providerPostgresUrl).host}`,
  );
  await row('token authorization_code', (side) => tokenGrant(side, 'authorization_code'));
  await row('token refresh_token', (side) => tokenGrant(side, 'refresh_token'));
  if (BUSY_CONNECTIONS > 0) {
    const busy = `, ${BUSY_CONNECTIONS} connections`;
    await row(`token authorization_code${busy}`, (side) =>
      tokenGrant(side, 'authorization_code', BUSY_CONNECTIONS),
    );
    await row(`token refresh_token${busy}`, (side) => tokenGrant(side, 'refresh_token', BUSY_CONNECTIONS));
  }
  await row('metadata document', (side) => metadata(side.url, side.metadataPath));
} finally {
  await ours.close();
  await inMemory.close();
  await onPostgres?.close();
  await postgresMeter?.close();
}
