import { createServer, type Server, type Socket } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, buildContext } from '../../src/app.ts';
import { loadConfig } from '../../src/config.ts';
import { openDatabase } from '../../src/db/database.ts';
import { ManualClock, SECOND } from '../../src/lib/clock.ts';
import { call } from '../support/api.ts';
import { startWaybill, TEST_SECRET_KEY, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

describe('GET /healthz', () => {
  it('answers 200 {status: ok} as JSON, without a token', async () => {
    const response = await call(w, 'GET', '/healthz');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toEqual({ status: 'ok' });
  });
});

describe('GET /readyz', () => {
  it('answers 200 when the database answers and every migration is applied', async () => {
    const response = await call(w, 'GET', '/readyz');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toEqual({ status: 'ready', failed: [] });
  });

  it('needs no token, and stays out of the API reference (probes, documented in docs/operations.md)', async () => {
    const doc = (await call(w, 'GET', '/openapi.json')).body;
    for (const path of ['/healthz', '/readyz']) {
      expect(doc.paths[path], path).toBeUndefined();
      expect((await call(w, 'GET', path, { token: 'sk_test_unknown' })).status, path).not.toBe(401);
    }
  });

  it('answers 503 naming migrations when one is missing', async () => {
    const row = await w.ctx.db
      .selectFrom('kysely_migration' as never)
      .selectAll()
      .where('name' as never, '=', '0003_webhooks' as never)
      .executeTakeFirstOrThrow();
    await w.ctx.db
      .deleteFrom('kysely_migration' as never)
      .where('name' as never, '=', '0003_webhooks' as never)
      .execute();
    try {
      const response = await call(w, 'GET', '/readyz');
      expect(response.status).toBe(503);
      expect(response.body).toEqual({ status: 'not_ready', failed: ['migrations'] });
    } finally {
      await w.ctx.db
        .insertInto('kysely_migration' as never)
        .values(row as never)
        .execute();
    }
    expect((await call(w, 'GET', '/readyz')).status).toBe(200);
  });

  it("answers 503 naming the worker when the worker's loop has not turned for more than 30 s", async () => {
    // Stands in for the delivery worker: its heartbeat is the last turn of its loop, on ctx.clock.
    let lastTurn: Date | null = null;
    w.ctx.health.workerHeartbeat = () => lastTurn;
    try {
      // Started, not turned yet.
      expect((await call(w, 'GET', '/readyz')).body).toEqual({ status: 'not_ready', failed: ['worker'] });
      lastTurn = w.clock.now();
      expect((await call(w, 'GET', '/readyz')).status).toBe(200);
      w.clock.advance(30 * SECOND);
      expect((await call(w, 'GET', '/readyz')).status).toBe(200);
      w.clock.advance(1);
      const stale = await call(w, 'GET', '/readyz');
      expect(stale.status).toBe(503);
      expect(stale.body).toEqual({ status: 'not_ready', failed: ['worker'] });
      // The loop turns again: ready again.
      lastTurn = w.clock.now();
      expect((await call(w, 'GET', '/readyz')).status).toBe(200);
    } finally {
      w.ctx.health.workerHeartbeat = null;
    }
  });

  it('answers 503 at once when the process is shutting down, while /healthz still answers 200', async () => {
    w.ctx.health.shuttingDown = true;
    try {
      const response = await call(w, 'GET', '/readyz');
      expect(response.status).toBe(503);
      expect(response.body).toEqual({ status: 'not_ready', failed: ['shutting_down'] });
      expect((await call(w, 'GET', '/healthz')).status).toBe(200);
    } finally {
      w.ctx.health.shuttingDown = false;
    }
  });
});

describe('while the process starts (waiting for its database, migrating)', () => {
  it('probes answer (/readyz 503 naming starting), everything else 503 service.starting in its own format', async () => {
    w.ctx.health.starting = true;
    try {
      expect((await call(w, 'GET', '/healthz')).status).toBe(200);
      const ready = await call(w, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({ status: 'not_ready', failed: ['starting'] });
      // Before the token is looked at (that needs the database), and on routes that do not exist.
      for (const path of ['/v1/shipments', '/v1/nothing-here', '/openapi.json']) {
        const answer = await call(w, 'GET', path, { token: 'sk_live_unknown' });
        expect(answer.status, path).toBe(503);
        expect(answer.headers['content-type'], path).toMatch(/^application\/problem\+json/);
        expect(answer.headers['retry-after'], path).toBe('5');
        expect(answer.body, path).toMatchObject({ status: 503, code: 'service.starting' });
      }
      const token = await call(w, 'POST', '/oauth/token', {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        rawBody: 'grant_type=refresh_token&refresh_token=atr_x&client_id=app_x',
      });
      expect(token.status).toBe(503);
      expect(token.body).toEqual({
        error: 'temporarily_unavailable',
        error_description: 'the service is starting',
      });
      // The dashboard's pages answer people with a page.
      const page = await call(w, 'GET', '/dashboard');
      expect(page.status).toBe(503);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
    } finally {
      w.ctx.health.starting = false;
    }
    expect((await call(w, 'GET', '/readyz')).status).toBe(200);
    expect((await call(w, 'GET', '/openapi.json')).status).toBe(200);
  });
});

describe('GET /readyz without a database', () => {
  it('answers 503 naming the database once the database is closed; /healthz stays 200', async () => {
    const lost = await startWaybill();
    try {
      expect((await call(lost, 'GET', '/readyz')).status).toBe(200);
      await lost.ctx.database.close();
      const response = await call(lost, 'GET', '/readyz');
      expect(response.status).toBe(503);
      expect(response.body).toEqual({ status: 'not_ready', failed: ['database'] });
      expect((await call(lost, 'GET', '/healthz')).body).toEqual({ status: 'ok' });
    } finally {
      await lost.app.close();
    }
  });

  /** A Waybill on PostgreSQL at `port` of 127.0.0.1, where no database answers. */
  async function waybillOnPostgresAt(port: number) {
    const config = loadConfig({
      PORT: '0',
      WAYBILL_DATABASE_URL: `postgres://waybill@127.0.0.1:${port}/waybill`,
      WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
      WAYBILL_DEMO: '0',
    });
    const database = await openDatabase(config);
    const ctx = buildContext({
      config,
      database,
      clock: new ManualClock(),
      logger: pino({ level: 'silent' }),
    });
    return { app: await buildApp(ctx), database };
  }

  it('answers 503 naming the database when PostgreSQL refuses the connection', async () => {
    // A port that was free a moment ago and is closed now: connections are refused.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const { app, database } = await waybillOnPostgresAt(port);
    try {
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({ status: 'not_ready', failed: ['database'] });
    } finally {
      await app.close();
      await database.close();
    }
  });

  it('answers 503 within its bound when the database accepts the connection but never answers', async () => {
    // A server that takes the connection and says nothing: the check gives up after 2 s.
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { app, database } = await waybillOnPostgresAt((silent.address() as { port: number }).port);
    try {
      const response = await app.inject({ method: 'GET', url: '/readyz' });
      expect(response.statusCode).toBe(503);
      expect(response.json()).toEqual({ status: 'not_ready', failed: ['database'] });
      expect(sockets.length).toBeGreaterThan(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
      await app.close();
      await database.close();
    }
  });
});
