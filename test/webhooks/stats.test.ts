import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, HOUR, MINUTE } from '../../src/lib/clock.ts';
import { type Receiver, startReceiver, testWorker } from '../delivery/support.ts';
import {
  type CompanyFixture,
  call,
  createApiToken,
  createCompany,
  createShipment,
  type Json,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient } from '../web/page-client.ts';
import { createEndpoint } from './api/support.ts';

/** PostgreSQL's percentile_cont: linear interpolation between the closest ranks. */
function percentileCont(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const position = fraction * (sorted.length - 1);
  const below = Math.floor(position);
  const low = sorted[below] as number;
  const high = sorted[Math.min(below + 1, sorted.length - 1)] as number;
  return low + (high - low) * (position - below);
}

describe('endpoint stats: a receiver that answers 200 for half the attempts and 500 for the other half', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;
  let endpointId: string;
  const start = new Date('2026-11-21T12:00:00.000Z');

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    company = await createCompany(w);
    endpointId = (
      await createEndpoint(w, company.testToken, { url: receiver.url, event_types: ['shipment.created'] })
    ).id;

    const answerWith = (status: (n: number) => number) => {
      let n = 0;
      receiver.answer = (_message, res) => {
        res.statusCode = status(n++);
        res.end('answer');
      };
    };
    const worker = testWorker(w);
    // A failing test message first: test sends are not counted, and a later success clears its streak.
    answerWith(() => 500);
    const test = await call(w, 'POST', `/v1/webhook-endpoints/${endpointId}/test`, {
      token: company.testToken,
    });
    expect(test.body.status_code).toBe(500);

    // 12:00: four deliveries, answered 200, 500, 200, 500: the two failures wait 30 s for a retry.
    answerWith((n) => (n % 2 === 0 ? 200 : 500));
    for (let i = 0; i < 4; i++) await createShipment(w, company.testToken);
    expect(await worker.tick()).toBe(4);
    // 13:00: the two retries succeed.
    w.clock.advance(HOUR);
    answerWith(() => 200);
    expect(await worker.tick()).toBe(2);
    // 14:00: two new deliveries fail; the endpoint is failing from now on.
    w.clock.advance(HOUR);
    answerWith(() => 500);
    for (let i = 0; i < 2; i++) await createShipment(w, company.testToken);
    expect(await worker.tick()).toBe(2);
    await worker.stop();
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  const stats = (query = '', token = company.testToken) =>
    call(w, 'GET', `/v1/webhook-endpoints/${endpointId}/stats${query}`, { token });

  /** Every scheduled attempt of the endpoint, read through the deliveries API. */
  async function attemptsThroughApi(): Promise<Json[]> {
    const list = await call(w, 'GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, {
      token: company.testToken,
    });
    const attempts: Json[] = [];
    for (const delivery of list.body.data) {
      const detail = await call(w, 'GET', `/v1/webhook-deliveries/${delivery.id}`, {
        token: company.testToken,
      });
      attempts.push(...detail.body.attempts.filter((a: Json) => a.trigger !== 'test'));
    }
    return attempts;
  }

  it('counts attempts, successes, failures, the rate and the duration percentiles', async () => {
    const response = await stats();
    expect(response.status).toBe(200);
    const body = response.body;
    expect(body).toMatchObject({
      window: '24h',
      from: '2026-11-20T15:00:00.000Z',
      to: '2026-11-21T14:00:00.000Z',
      attempts: 8,
      succeeded: 4,
      failed: 4,
      success_rate: 0.5,
      failing_since: '2026-11-21T14:00:00.000Z',
      disables_at: '2026-11-24T14:00:00.000Z',
      last_failure: { attempted_at: '2026-11-21T14:00:00.000Z', status_code: 500, error: null },
    });
    expect(receiver.received).toHaveLength(9);

    const attempts = await attemptsThroughApi();
    expect(attempts).toHaveLength(8);
    const durations = attempts.map((a) => a.duration_ms as number);
    expect(body.p50_ms).toBe(Math.round(percentileCont(durations, 0.5)));
    expect(body.p95_ms).toBe(Math.round(percentileCont(durations, 0.95)));
    const failedDelivery = attempts.find(
      (a) => a.status_code === 500 && a.attempted_at === body.last_failure.attempted_at,
    );
    expect(failedDelivery).toBeDefined();
  });

  it('gives every UTC hour of the window, oldest first, empty hours included', async () => {
    const { hourly } = (await stats('?window=24h')).body;
    expect(hourly).toHaveLength(24);
    expect(hourly[0]).toEqual({ hour: '2026-11-20T15:00:00.000Z', succeeded: 0, failed: 0 });
    expect(hourly.slice(-3)).toEqual([
      { hour: '2026-11-21T12:00:00.000Z', succeeded: 2, failed: 2 },
      { hour: '2026-11-21T13:00:00.000Z', succeeded: 2, failed: 0 },
      { hour: '2026-11-21T14:00:00.000Z', succeeded: 0, failed: 2 },
    ]);
    const sum = hourly.reduce((n: number, h: Json) => n + h.succeeded + h.failed, 0);
    expect(sum).toBe(8);
  });

  it('over 7 days: 168 hours; a day later the 24-hour window is empty while the streak goes on', async () => {
    const week = (await stats('?window=7d')).body;
    expect(week.hourly).toHaveLength(168);
    expect(week).toMatchObject({ attempts: 8, succeeded: 4, failed: 4, success_rate: 0.5 });

    w.clock.advance(DAY);
    try {
      const later = (await stats()).body;
      expect(later).toMatchObject({
        attempts: 0,
        succeeded: 0,
        failed: 0,
        success_rate: null,
        p50_ms: null,
        p95_ms: null,
        failing_since: '2026-11-21T14:00:00.000Z',
        last_failure: { attempted_at: '2026-11-21T14:00:00.000Z' },
      });
      expect(later.hourly.every((h: Json) => h.succeeded === 0 && h.failed === 0)).toBe(true);
      expect((await stats('?window=7d')).body.attempts).toBe(8);
    } finally {
      w.clock.set(new Date(start.getTime() + 2 * HOUR));
    }
  });

  it('follows the visibility rules of endpoint reads, and refuses an unknown window', async () => {
    const other = await createCompany(w, 'Other Company');
    const foreign = await stats('', other.testToken);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('webhook_endpoint.not_found');
    // A live token sees only live endpoints: this test one does not exist for it.
    expect((await stats('', company.liveToken)).status).toBe(404);
    const shipmentsOnly = await createApiToken(w, company.owner, company.tenantId, {
      mode: 'test',
      scopes: ['shipments:read'],
    });
    expect((await stats('', shipmentsOnly)).status).toBe(403);
    expect((await call(w, 'GET', `/v1/webhook-endpoints/${endpointId}/stats`)).status).toBe(401);
    const bad = await stats('?window=30d');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation.failed');
  });

  it('the dashboard shows the figures, the hourly chart, and in the list the rate and the failing warning', async () => {
    // 15:01: failing for 1 h 1 min, disabled at 14:00 three days on.
    w.clock.set(new Date(start.getTime() + 3 * HOUR + MINUTE));
    const browser = new PageClient(w);
    browser.cookies.set('waybill_session', company.owner.token);

    const page = await browser.request('GET', `/dashboard/webhooks/${endpointId}`);
    expect(page.status).toBe(200);
    const figure = (name: string) => new RegExp(`data-figure="${name}">([^<]*)<`).exec(page.text)?.[1];
    const api = (await stats()).body;
    expect(figure('attempts')).toBe('8');
    expect(figure('succeeded')).toBe('4');
    expect(figure('failed')).toBe('4');
    expect(figure('success_rate')).toBe('50%');
    expect(figure('p50_ms')).toBe(`${api.p50_ms} ms`);
    expect(figure('p95_ms')).toBe(`${api.p95_ms} ms`);
    // The page's words, tags left out (times are <time> elements the page's script puts in the viewer's zone).
    const words = page.text.replace(/<[^>]+>/g, '');
    expect(words).toContain('Failing since 2026-11-21 14:00 UTC (1 h 1 min); disabled in 2 d 22 h');
    expect(words).toContain('Last failure: 2026-11-21 14:00 UTC 1 h ago, HTTP 500');
    expect(page.text).toContain('<time class="local-time" datetime="2026-11-21T14:00:00.000Z"');
    // The chart: inline SVG, one bar group per hour, described in words; no script or inline style.
    const svg = /<svg class="chart"[\s\S]*?<\/svg>/.exec(page.text)?.[0] ?? '';
    expect(svg).toMatch(/role="img" aria-label="Attempts per hour/);
    expect(svg.match(/<g>/g)).toHaveLength(24);
    expect(svg).toContain('<title>2026-11-21 12:00 UTC: 2 succeeded, 2 failed</title>');
    expect(svg).toContain('<title>2026-11-21 14:00 UTC: 0 succeeded, 2 failed</title>');
    expect(svg.match(/class="chart-ok"/g)).toHaveLength(2);
    expect(svg.match(/class="chart-bad"/g)).toHaveLength(2);
    // Axes as HTML text beside the SVG (0 to the highest count, the hours at the ends and middle),
    // a legend, and a table twin of every hour.
    expect(svg).not.toContain('<text');
    expect(page.text).toContain(
      '<div class="chart-y" aria-hidden="true"><span class="chart-tick">4</span><span class="chart-tick">2</span><span class="chart-tick">0</span></div>',
    );
    const xAxis = /<div class="chart-x" aria-hidden="true">([\s\S]*?)<\/div>/.exec(page.text)?.[1] ?? '';
    expect(xAxis.match(/<span class="chart-tick">\d{2}-\d{2} \d{2}:00<\/span>/g)).toHaveLength(3);
    expect(page.text).toMatch(/class="chart-legend">[\s\S]*succeeded[\s\S]*failed/);
    const twin =
      /<table class="sr-only"><caption>Attempts per hour<\/caption>[\s\S]*?<\/table>/.exec(page.text)?.[0] ??
      '';
    expect(twin.match(/<th scope="row">/g)).toHaveLength(24);
    expect(twin).toContain('<th scope="row">2026-11-21 14:00 UTC</th><td>0</td><td>2</td>');
    // No inline script or style: the one script is the same-origin file of the times.
    expect(page.text).not.toMatch(/<script(?! src="\/static\/(local-time|copy)\.js")|style="|\son\w+="/i);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'self'/);

    const week = await browser.request('GET', `/dashboard/webhooks/${endpointId}?window=7d`);
    expect(week.text).toContain('Health, last 7 days');
    expect(/<svg class="chart"[\s\S]*?<\/svg>/.exec(week.text)?.[0].match(/<g>/g)).toHaveLength(168);

    const list = await browser.request('GET', '/dashboard/webhooks');
    expect(list.status).toBe(200);
    expect(list.text).toContain('Success (24 h)');
    expect(list.text).toMatch(/<td>50%<\/td>/);
    expect(list.text).toContain('Failing for 1 h 1 min: disabled in 2 d 22 h unless a delivery succeeds');
  });

  it('no warning while an endpoint has failed for an hour or less', async () => {
    w.clock.set(new Date(start.getTime() + 3 * HOUR));
    const browser = new PageClient(w);
    browser.cookies.set('waybill_session', company.owner.token);
    const list = await browser.request('GET', '/dashboard/webhooks');
    expect(list.text).toMatch(/<td>50%<\/td>/);
    expect(list.text).not.toContain('Failing for');
  });
});
