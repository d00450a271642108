import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/lib/clock.ts';
import { type OperationsListener, startOperationsListener } from '../../src/modules/operations/listener.ts';
import { testWorker } from '../delivery/support.ts';
import { discover, insecure, obtainTokens, postForm, registerApp, type TestApp } from '../oauth/support.ts';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { type Scrape, scrape } from '../support/metrics.ts';
import { createEndpoint, type Receiver, startReceiver } from '../webhooks/api/support.ts';

let w: TestWaybill;
let metrics: OperationsListener;
let company: CompanyFixture;

beforeAll(async () => {
  w = await startWaybill();
  metrics = await startOperationsListener(w.ctx, { port: 0, host: '127.0.0.1' });
  company = await createCompany(w);
});
afterAll(async () => {
  await metrics?.close();
  await w?.close();
});

/** A metric's value, 0 when the series does not exist yet. */
const sampleOf = (s: Scrape, name: string, labels: Record<string, string> = {}) => s.value(name, labels) ?? 0;

describe('the metrics listener', () => {
  it('serves the Prometheus text format with the process defaults, every name prefixed waybill_', async () => {
    const s = await scrape(metrics.url);
    expect(s.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(s.value('waybill_process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(s.text).toMatch(/^waybill_nodejs_eventloop_lag_seconds /m);
    expect(s.text).toMatch(/^waybill_nodejs_heap_size_used_bytes /m);
    const names = [...s.text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((name) => !name?.startsWith('waybill_'))).toEqual([]);
    // Every delivery outcome exists from the start, so an alert's rate() sees the first one.
    for (const outcome of ['succeeded', 'failed_attempt', 'failed', 'disabled', 'cancelled']) {
      expect(s.value('waybill_webhook_deliveries_total', { kind: 'endpoint', outcome })).toBe(0);
    }
    expect(s.value('waybill_webhook_sends_in_flight', { kind: 'endpoint' })).toBe(0);
  });

  it('is not served on the public port: /metrics there is a 404 problem', async () => {
    const response = await fetch(`${w.url}/metrics`);
    expect(response.status).toBe(404);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toMatchObject({ status: 404, code: 'request.not_found' });
  });

  it('answers /healthz and /readyz too, for a worker process that has no other port', async () => {
    const health = await fetch(`${metrics.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${metrics.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', failed: [] });
  });
});

describe('waybill_http_request_duration_seconds', () => {
  it('counts answers by route pattern and status class, never by the raw URL', async () => {
    const notFound = { method: 'GET', route: '/v1/shipments/:id', status_class: '4xx' };
    const found = { ...notFound, status_class: '2xx' };
    const before = await scrape(metrics.url);
    const shipment = await createShipment(w, company.liveToken);
    for (const id of ['shp_nope1', 'shp_nope2', 'shp_nope3']) {
      expect((await call(w, 'GET', `/v1/shipments/${id}`, { token: company.liveToken })).status).toBe(404);
    }
    expect((await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken })).status).toBe(
      200,
    );
    const unmatched = await fetch(`${w.url}/no/such/page/${shipment.id}`);
    expect(unmatched.status).toBe(404);
    const after = await scrape(metrics.url);

    const count = 'waybill_http_request_duration_seconds_count';
    expect(sampleOf(after, count, notFound) - sampleOf(before, count, notFound)).toBe(3);
    expect(sampleOf(after, count, found) - sampleOf(before, count, found)).toBe(1);
    const post = { method: 'POST', route: '/v1/shipments', status_class: '2xx' };
    expect(sampleOf(after, count, post) - sampleOf(before, count, post)).toBe(1);
    const none = { method: 'GET', route: 'unmatched', status_class: '4xx' };
    expect(sampleOf(after, count, none) - sampleOf(before, count, none)).toBe(1);
    // The histogram's buckets add up: the +Inf bucket equals the count.
    expect(sampleOf(after, 'waybill_http_request_duration_seconds_bucket', { ...notFound, le: '+Inf' })).toBe(
      sampleOf(after, count, notFound),
    );
    expect(after.text).not.toContain('shp_');
  });
});

describe('waybill_oauth_grants_total', () => {
  let as: oauth.AuthorizationServer;
  let app: TestApp;
  beforeAll(async () => {
    as = await discover(w);
    app = await registerApp(w);
  });

  const grants = (s: Scrape, grant_type: string, outcome: string) =>
    sampleOf(s, 'waybill_oauth_grants_total', { grant_type, outcome });

  it('counts issued tokens, invalid grants and detected reuse by grant type', async () => {
    const before = await scrape(metrics.url);
    const tokens = await obtainTokens(w, as, app, company.owner);
    const client = { client_id: app.clientId };
    const clientAuth = oauth.ClientSecretBasic(app.clientSecret as string);
    const refreshed = await oauth.refreshTokenGrantRequest(
      as,
      client,
      clientAuth,
      tokens.refresh_token as string,
      insecure,
    );
    expect(refreshed.status).toBe(200);
    const afterIssue = await scrape(metrics.url);
    expect(
      grants(afterIssue, 'authorization_code', 'issued') - grants(before, 'authorization_code', 'issued'),
    ).toBe(1);
    expect(grants(afterIssue, 'refresh_token', 'issued') - grants(before, 'refresh_token', 'issued')).toBe(1);

    const basicAuth = {
      authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}`,
    };
    const unknownCode = await postForm(
      w,
      '/oauth/token',
      {
        grant_type: 'authorization_code',
        code: 'atc_unknown',
        redirect_uri: app.redirectUri,
        code_verifier: 'v'.repeat(43),
      },
      basicAuth,
    );
    expect(unknownCode.body.error).toBe('invalid_grant');
    // The spent refresh token again, after the 30 s race window: the installation's tokens are revoked.
    w.clock.advance(31_000);
    const reused = await postForm(
      w,
      '/oauth/token',
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token as string },
      basicAuth,
    );
    expect(reused.body.error).toBe('invalid_grant');
    const password = await postForm(w, '/oauth/token', { grant_type: 'password' }, basicAuth);
    expect(password.body.error).toBe('unsupported_grant_type');
    const after = await scrape(metrics.url);

    const moved = (type: string, outcome: string) =>
      grants(after, type, outcome) - grants(afterIssue, type, outcome);
    expect(moved('authorization_code', 'invalid_grant')).toBe(1);
    expect(moved('refresh_token', 'reuse_detected')).toBe(1);
    expect(moved('refresh_token', 'invalid_grant')).toBe(0);
    expect(moved('other', 'unsupported_grant_type')).toBe(1);
    expect(moved('authorization_code', 'issued') + moved('refresh_token', 'issued')).toBe(0);
  });
});

describe('the delivery queue gauges', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  it('show deliveries due now, scheduled later, and how long the oldest due one has waited', async () => {
    const depth = (s: Scrape, state: string) => s.value('waybill_webhook_queue_depth', { state });
    const oldest = (s: Scrape) => s.value('waybill_webhook_oldest_due_age_seconds');
    const company = await createCompany(w, 'Queue Company');
    await createEndpoint(w, company.liveToken, { url: receiver.url, event_types: ['shipment.created'] });
    const empty = await scrape(metrics.url);
    expect(depth(empty, 'due')).toBe(0);
    expect(depth(empty, 'scheduled')).toBe(0);
    expect(oldest(empty)).toBe(0);

    // No worker runs: the deliveries wait.
    await createShipment(w, company.liveToken);
    await createShipment(w, company.liveToken);
    const queued = await scrape(metrics.url);
    expect(depth(queued, 'due')).toBe(2);
    expect(oldest(queued)).toBe(0);
    w.clock.advance(5 * MINUTE);
    const waited = await scrape(metrics.url);
    expect(depth(waited, 'due')).toBe(2);
    expect(oldest(waited)).toBe(300);

    // The receiver fails: both deliveries are scheduled for a retry, none is due.
    receiver.answer = { status: 500, body: 'down' };
    const worker = testWorker(w);
    expect(await worker.tick()).toBe(2);
    await worker.stop();
    const retrying = await scrape(metrics.url);
    expect(depth(retrying, 'due')).toBe(0);
    expect(depth(retrying, 'scheduled')).toBe(2);
    expect(oldest(retrying)).toBe(0);
  });
});

describe('deliveries by outcome', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  const outcome = (s: Scrape, name: string) =>
    sampleOf(s, 'waybill_webhook_deliveries_total', { kind: 'endpoint', outcome: name });
  const moved = (before: Scrape, after: Scrape, name: string) => outcome(after, name) - outcome(before, name);

  it('count successes, failed attempts, a 410 that disables its endpoint and what that cancels, and a manual disable', async () => {
    const company = await createCompany(w, 'Outcome Company');
    const endpoint = await createEndpoint(w, company.liveToken, {
      url: receiver.url,
      event_types: ['shipment.created'],
    });
    const worker = testWorker(w);
    try {
      const start = await scrape(metrics.url);
      const attemptsBefore = sampleOf(start, 'waybill_webhook_attempt_duration_seconds_count', {
        kind: 'endpoint',
      });

      receiver.answer = { status: 200, body: 'ok' };
      await createShipment(w, company.liveToken);
      await createShipment(w, company.liveToken);
      expect(await worker.tick()).toBe(2);
      const succeeded = await scrape(metrics.url);
      expect(moved(start, succeeded, 'succeeded')).toBe(2);
      expect(
        sampleOf(succeeded, 'waybill_webhook_attempt_duration_seconds_count', { kind: 'endpoint' }) -
          attemptsBefore,
      ).toBe(2);

      receiver.answer = { status: 500, body: 'down' };
      await createShipment(w, company.liveToken);
      expect(await worker.tick()).toBe(1);
      const failing = await scrape(metrics.url);
      expect(moved(succeeded, failing, 'failed_attempt')).toBe(1);

      // 410 Gone: the attempt fails its delivery, disables the endpoint and cancels the one
      // delivery still waiting for a retry.
      receiver.answer = { status: 410, body: 'gone' };
      await createShipment(w, company.liveToken);
      expect(await worker.tick()).toBe(1);
      const gone = await scrape(metrics.url);
      expect(moved(failing, gone, 'failed')).toBe(1);
      expect(moved(failing, gone, 'disabled')).toBe(1);
      expect(moved(failing, gone, 'cancelled')).toBe(1);

      // Enabled again with two deliveries waiting, then disabled by hand: both are cancelled.
      const enable = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
        token: company.liveToken,
        body: { enabled: true },
      });
      expect(enable.status).toBe(200);
      await createShipment(w, company.liveToken);
      await createShipment(w, company.liveToken);
      const disable = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
        token: company.liveToken,
        body: { enabled: false },
      });
      expect(disable.status).toBe(200);
      const manual = await scrape(metrics.url);
      expect(moved(gone, manual, 'cancelled')).toBe(2);
      expect(moved(gone, manual, 'disabled')).toBe(0);
    } finally {
      await worker.stop();
    }
  });
});
