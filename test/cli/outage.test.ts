import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { afterAll, describe, expect, it } from 'vitest';
import { type Receiver, startReceiver } from '../delivery/support.ts';
import type { Json } from '../support/api.ts';
import { until as untilIn } from '../support/eventually.ts';
import { createSchema, engine, TEST_SECRET_KEY } from '../support/harness.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { type Run, waitFor, waybill } from './support.ts';

/** Long enough to outlast every retry, backoff and pool timeout of the processes (issue 22). */
const OUTAGE_MS = 30_000;
const TIMEOUT = 240_000;
const direct = new URL(process.env.WAYBILL_TEST_DATABASE_URL ?? 'postgres://localhost/none');

/** Real time passes here: the processes run on the system clock, over real sockets. */
const until = (check: () => Promise<unknown>, what: string, timeoutMs = 90_000) =>
  untilIn(check, timeoutMs, what, 200);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  headers: Headers;
  body: Json;
}

async function api(
  base: string,
  method: string,
  path: string,
  init: { token?: string; body?: unknown } = {},
) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
      ...(init.body ? { 'content-type': 'application/json' } : {}),
    },
    ...(init.body ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text ? JSON.parse(text) : null,
  } as Answer;
}

async function created(base: string, path: string, init: { token?: string; body: unknown }): Promise<Json> {
  const answer = await api(base, 'POST', path, init);
  if (answer.status !== 201) throw new Error(`POST ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** A person, a company, a live API token and an endpoint to the receiver, made through the API. */
async function setUp(base: string, receiver: Receiver) {
  const email = `owner-${randomUUID()}@example.test`;
  const password = 'correct horse battery';
  await created(base, '/v1/auth/signup', { body: { email, password, name: 'Owner' } });
  const session = await created(base, '/v1/auth/sessions', { body: { email, password } });
  const company = await created(base, '/v1/companies', { token: session.token, body: { name: 'Outage Co' } });
  const apiToken = await created(base, `/v1/companies/${company.id}/api-tokens`, {
    token: session.token,
    body: { name: 'outage', mode: 'live', scopes: ['shipments:read', 'shipments:write', 'webhooks:write'] },
  });
  const endpoint = await created(base, '/v1/webhook-endpoints', {
    token: apiToken.token,
    body: { url: receiver.url, event_types: ['shipment.created'] },
  });
  return {
    token: apiToken.token as string,
    endpointId: endpoint.id as string,
    secret: endpoint.secret as string,
  };
}

async function shipment(base: string, token: string): Promise<string> {
  return (await created(base, '/v1/shipments', { token, body: { recipient_name: 'Ada', currency: 'EUR' } }))
    .id;
}

/** The shipments whose `shipment.created` reached the receiver, each with how often, signatures checked. */
function arrivals(receiver: Receiver, secret: string): Map<string, number> {
  const seen = new Map<string, number>();
  for (const message of receiver.received) {
    const event = new Webhook(secret).verify(message.body, message.headers as Record<string, string>) as Json;
    seen.set(event.data.shipment.id, (seen.get(event.data.shipment.id) ?? 0) + 1);
  }
  return seen;
}

async function ready(url: string): Promise<boolean> {
  return (await fetch(`${url}/readyz`)).status === 200;
}

function stillRunning(run: Run): void {
  expect(run.child.exitCode, `${run.stdout()}\n${run.stderr()}`).toBeNull();
  expect(run.child.signalCode).toBeNull();
}

// Separate processes need PostgreSQL: the embedded engine belongs to one process.
describe.runIf(engine === 'postgres')('waybill processes and a PostgreSQL outage', () => {
  const runs: Run[] = [];
  const proxies: TcpProxy[] = [];
  const receivers: Receiver[] = [];

  afterAll(async () => {
    for (const run of runs) if (run.child.exitCode === null) run.child.kill('SIGKILL');
    await Promise.all([...proxies.map((proxy) => proxy.close()), ...receivers.map((r) => r.close())]);
  });

  /** A schema of its own and a proxy to the database; `url` goes through the proxy, `bypass` does not. */
  async function installation() {
    const schema = await createSchema();
    const proxy = await startTcpProxy(direct.hostname, Number(direct.port || 5432));
    proxies.push(proxy);
    const at = (port: string) => {
      const url = new URL(direct);
      url.hostname = '127.0.0.1';
      url.port = port;
      // Trust authentication ignores it; the logs must not show it either way.
      if (!url.password) url.password = 'never-in-the-logs';
      url.searchParams.set('options', `-c search_path=${schema}`);
      return url.toString();
    };
    return { proxy, url: at(String(proxy.port)), bypass: at(direct.port || '5432') };
  }

  /**
   * A `waybill` process on `databaseUrl`. A worker gets a metrics listener only when asked: its
   * socket would hold the event loop, and the worker of the issue had none.
   */
  function start(args: string[], databaseUrl: string, options: { metrics?: boolean } = {}): Run {
    const run = waybill(args, {
      WAYBILL_DATABASE_URL: databaseUrl,
      WAYBILL_SECRET_KEY: TEST_SECRET_KEY,
      WAYBILL_DEMO: '0',
      WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
      PORT: '0',
      ...(options.metrics ? { WAYBILL_METRICS_PORT: '0' } : {}),
    });
    runs.push(run);
    return run;
  }

  /** The public address of a `serve` (127.0.0.1: the line names localhost). */
  async function apiOf(run: Run): Promise<string> {
    const port = (await waitFor(run, /Waybill listening on http:\/\/localhost:(\d+)/))[1];
    return `http://127.0.0.1:${port}`;
  }

  async function metricsOf(run: Run): Promise<string> {
    return (await waitFor(run, /Waybill metrics on (http:\/\/[\d.:]+)\/metrics/))[1] as string;
  }

  async function receiverOf(answer?: (res: ServerResponse) => void): Promise<Receiver> {
    const receiver = await startReceiver(answer ? (_message, res) => answer(res) : undefined);
    receivers.push(receiver);
    return receiver;
  }

  it.concurrent(
    'an outage of 30 s while idle: serve --no-worker and worker keep running and deliver what another API process took meanwhile',
    async () => {
      const { proxy, url, bypass } = await installation();
      const receiver = await receiverOf();
      const serve = start(['serve', '--no-worker'], url);
      const worker = start(['worker'], url);
      // An API process the outage does not reach, on the same database.
      const other = start(['serve', '--no-worker'], bypass);
      const [api, otherApi] = await Promise.all([
        apiOf(serve),
        apiOf(other),
        waitFor(worker, /worker running/),
      ]);
      await until(async () => (await ready(api)) && ready(otherApi), 'readiness');
      const { token, secret } = await setUp(api, receiver);
      const before = await shipment(api, token);
      await until(async () => arrivals(receiver, secret).has(before), 'the delivery before the outage');

      proxy.cut();
      const meanwhile = [await shipment(otherApi, token), await shipment(otherApi, token)];
      const during = await get(api, `/v1/shipments/${before}`, token);
      expect(during.status).toBe(503);
      expect(during.body.code).toBe('service.unavailable');
      const readiness = await get(api, '/readyz');
      expect(readiness.status).toBe(503);
      expect(readiness.body).toEqual({ status: 'not_ready', failed: ['database'] });
      await pause(OUTAGE_MS);
      stillRunning(serve);
      stillRunning(worker);
      proxy.restore();

      await until(
        async () => meanwhile.every((id) => arrivals(receiver, secret).has(id)),
        'what came meanwhile',
      );
      const after = await shipment(api, token);
      await until(async () => arrivals(receiver, secret).has(after), 'the delivery after the outage');
      await until(async () => ready(api), 'readiness after the outage');
      stillRunning(serve);
      stillRunning(worker);
      expect(serve.stdout() + worker.stdout()).toContain('database connection lost');
    },
    TIMEOUT,
  );

  it.concurrent(
    'an outage mid-delivery: the attempts answered meanwhile are recorded once it is back, sent once; a stop with the database away exits 0',
    async () => {
      const { proxy, url } = await installation();
      let holding = true;
      const held: ServerResponse[] = [];
      const receiver = await receiverOf((res) => {
        if (holding) held.push(res);
        else res.end('ok');
      });
      const serve = start(['serve'], url);
      const worker = start(['worker'], url);
      const [api] = await Promise.all([apiOf(serve), waitFor(worker, /worker running/)]);
      await until(async () => ready(api), 'readiness');
      const { token, endpointId, secret } = await setUp(api, receiver);
      const ids = [];
      for (let i = 0; i < 4; i++) ids.push(await shipment(api, token));
      await until(async () => held.length === ids.length, 'the requests in flight');

      proxy.cut();
      // Answered while the database is away (within the 10 s deadline): the records must wait.
      await pause(2_000);
      holding = false;
      for (const res of held) res.end('answered during the outage');
      await pause(OUTAGE_MS - 2_000);
      stillRunning(serve);
      stillRunning(worker);
      proxy.restore();

      await until(async () => {
        const page = await get(api, `/v1/webhook-endpoints/${endpointId}/deliveries?status=succeeded`, token);
        return page.body?.data?.length === ids.length;
      }, 'the deliveries to succeed');
      const deliveries = await get(api, `/v1/webhook-endpoints/${endpointId}/deliveries`, token);
      for (const delivery of deliveries.body.data) {
        const one = await get(api, `/v1/webhook-deliveries/${delivery.id}`, token);
        expect(one.body.attempts.map((a: Json) => a.response_body)).toEqual(['answered during the outage']);
      }
      // Recorded, not lost and sent again once the lease ran out: each message arrived once.
      expect([...arrivals(receiver, secret).entries()].sort()).toEqual(ids.map((id) => [id, 1]).sort());
      stillRunning(serve);
      stillRunning(worker);

      // Stopping while the database is away: bounded, and a clean exit.
      proxy.cut();
      serve.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      expect(await serve.exited).toBe(0);
      expect(await worker.exited).toBe(0);
    },
    TIMEOUT,
  );

  it.concurrent(
    'a start during an outage: serve and worker listen, wait for the database (refused, then starting up), migrate together, then deliver',
    async () => {
      const { proxy, url } = await installation();
      const receiver = await receiverOf();
      proxy.cut();
      const serve = start(['serve', '--no-worker'], url, { metrics: true });
      const worker = start(['worker'], url, { metrics: true });
      const [base, serveOps, workerOps] = await Promise.all([
        apiOf(serve),
        metricsOf(serve),
        metricsOf(worker),
      ]);
      for (const probe of [base, serveOps, workerOps]) {
        expect((await get(probe, '/healthz')).status).toBe(200);
        const readiness = await get(probe, '/readyz');
        expect(readiness.status).toBe(503);
        expect(readiness.body.failed).toEqual(['starting', 'database']);
      }
      expect((await fetch(`${workerOps}/metrics`)).status).toBe(200);
      const call = await get(base, '/v1/shipments', 'sk_live_whatever');
      expect(call.status).toBe(503);
      expect(call.headers.get('content-type')).toContain('application/problem+json');
      expect(call.headers.get('retry-after')).toBe('5');
      expect(call.body.code).toBe('service.starting');
      const oauth = await fetch(`${base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=refresh_token&refresh_token=atr_x&client_id=app_x',
      });
      expect(oauth.status).toBe(503);
      expect(((await oauth.json()) as Json).error).toBe('temporarily_unavailable');

      // A one-shot migrate gives up after its wait, saying why; a signal ends a waiting process at once.
      const migrate = start(['migrate', '--wait', '1'], url);
      expect(await migrate.exited).toBe(1);
      expect(migrate.stderr()).toMatch(/The database at 127\.0\.0\.1:\d+\/\w+ did not answer within 1 s/);
      const stopped = start(['worker'], url);
      await waitFor(stopped, /waiting for the database/);
      stopped.child.kill('SIGTERM');
      expect(await stopped.exited).toBe(0);

      await pause(OUTAGE_MS - 5_000);
      proxy.startingUp();
      await until(async () => /"code":"57P03"/.test(worker.stdout()), 'a try while the database starts up');
      await pause(5_000);
      stillRunning(serve);
      stillRunning(worker);
      proxy.restore();

      await waitFor(worker, /Waybill worker running/);
      await until(async () => (await ready(base)) && ready(workerOps), 'readiness once the database answers');
      const { token, secret } = await setUp(base, receiver);
      const id = await shipment(base, token);
      await until(async () => arrivals(receiver, secret).has(id), 'the delivery');
      stillRunning(serve);
      stillRunning(worker);
      for (const run of [serve, worker]) {
        expect(run.stdout()).toMatch(/"msg":"waiting for the database"/);
        expect(run.stdout() + run.stderr()).not.toContain('never-in-the-logs');
      }
    },
    TIMEOUT,
  );
});

/** A GET (with a token when given), its answer parsed. */
function get(base: string, path: string, token?: string): Promise<Answer> {
  return api(base, 'GET', path, token ? { token } : {});
}
