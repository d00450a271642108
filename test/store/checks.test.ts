import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { listing, registerPublishable, startEventsReceiver, submit, verifyingReceiver } from './support.ts';

let w: TestWaybill;
let developer: Person;
let secrets: Record<string, string>;
let verifying: Awaited<ReturnType<typeof verifyingReceiver>>;
let always200: Awaited<ReturnType<typeof startEventsReceiver>>;
let always401: Awaited<ReturnType<typeof startEventsReceiver>>;

beforeAll(async () => {
  w = await startWaybill();
  developer = await signUpPerson(w, 'Receiver Developer');
  secrets = {};
  // Each receiver is one app's events URL; the verifying one checks against that app's secret.
  verifying = await verifyingReceiver(w, () => secrets.verifying as string);
  always200 = await startEventsReceiver(() => 200);
  always401 = await startEventsReceiver(() => 401);
});
afterAll(async () => {
  await Promise.all([verifying?.close(), always200?.close(), always401?.close()]);
  await w?.close();
});

function byName(checks: Json[]): Record<string, Json> {
  return Object.fromEntries(checks.map((check) => [check.name, check]));
}

async function submitTo(receiverUrl: string, key: string) {
  const app = await registerPublishable(w, developer, receiverUrl);
  secrets[key] = app.events_secret;
  const submitted = await submit(w, developer, app.id, { listing: listing(app.scopes) });
  expect(submitted.status, submitted.text).toBe(201);
  return { app, checks: byName(submitted.body.checks), submission: submitted.body };
}

describe('automated checks against real receivers', () => {
  it('a receiver that verifies signatures passes both message checks', async () => {
    const { checks, submission } = await submitTo(verifying.url, 'verifying');
    expect(checks.events_url_rejects_bad_signature.passed).toBe(true);
    expect(checks.events_url_accepts_signed_test.passed).toBe(true);
    expect(checks.scope_justifications_complete.passed).toBe(true);
    // The receiver saw the wrong signature first, then the good one: same id, same body.
    expect(verifying.received.map((m) => m.status)).toEqual([401, 200]);
    const [bad, good] = verifying.received as [Json, Json];
    expect(bad.headers['webhook-id']).toBe(good.headers['webhook-id']);
    expect(bad.body).toBe(good.body);
    expect(bad.headers['webhook-signature']).not.toBe(good.headers['webhook-signature']);
    const envelope = JSON.parse(good.body);
    expect(envelope).toMatchObject({
      type: 'app.uninstalled',
      test: true,
      tenant_id: '00000000-0000-0000-0000-000000000000',
      livemode: false,
      data: {
        installation_id: 'inst_0000000000000000000000',
        customer_account_id: 'acct_0000000000000000000000',
        uninstalled_at: w.clock.now().toISOString(),
      },
    });
    expect(envelope.id).toBe(good.headers['webhook-id']);
    expect(good.headers['webhook-event']).toBe('app.uninstalled');
    expect(good.headers['user-agent']).toMatch(/^Waybill-Webhooks\/1\.0 /);
    // detail: what was sent and what came back.
    const detail = checks.events_url_accepts_signed_test.detail;
    expect(detail.sent.url).toBe(verifying.url);
    expect(detail.sent.body).toBe(good.body);
    expect(detail.sent.headers['webhook-signature']).toBe(good.headers['webhook-signature']);
    expect(detail.received).toMatchObject({ status_code: 200, body: 'thanks', error: null });
    expect(detail.received.duration_ms).toBeGreaterThanOrEqual(0);
    expect(checks.events_url_rejects_bad_signature.detail.received).toMatchObject({
      status_code: 401,
      body: 'refused',
    });
    // What the API lists later is what was recorded.
    const listed = await call(w, 'GET', `/v1/developer/apps/${submission.app_id}/submissions`, {
      token: developer.token,
    });
    expect(listed.body.data[0].checks).toEqual(submission.checks);
  });

  it('a receiver that accepts everything fails the wrong-signature check', async () => {
    const { checks, submission } = await submitTo(always200.url, 'always200');
    expect(checks.events_url_rejects_bad_signature.passed).toBe(false);
    expect(checks.events_url_rejects_bad_signature.detail.summary).toContain('answered 200');
    expect(checks.events_url_accepts_signed_test.passed).toBe(true);
    // A failing check does not reject the submission.
    expect(submission.status).toBe('submitted');
  });

  it('a receiver that refuses everything fails the signed-test check', async () => {
    const { checks } = await submitTo(always401.url, 'always401');
    expect(checks.events_url_rejects_bad_signature.passed).toBe(true);
    expect(checks.events_url_accepts_signed_test.passed).toBe(false);
    expect(checks.events_url_accepts_signed_test.detail.received.status_code).toBe(401);
  });

  it('a receiver answering a NUL byte (or bytes that are not UTF-8) is recorded, not a 500', async () => {
    for (const body of ['\u0000', Buffer.from([0x6f, 0x6b, 0x00, 0xff, 0xfe, 0x00])]) {
      const nul = await startEventsReceiver(
        () => 200,
        () => body,
      );
      try {
        const { checks, submission } = await submitTo(nul.url, 'nul');
        expect(submission.status).toBe('submitted');
        const received = checks.events_url_accepts_signed_test.detail.received;
        expect(received.status_code).toBe(200);
        expect(typeof received.body).toBe('string');
        expect(received.body).not.toContain('\u0000');
        // The stored submission reads back the same.
        const listed = await call(w, 'GET', `/v1/developer/apps/${submission.app_id}/submissions`, {
          token: developer.token,
        });
        expect(listed.status).toBe(200);
        expect(byName(listed.body.data[0].checks).events_url_accepts_signed_test.detail.received.body).toBe(
          received.body,
        );
        // "Check my events URL" answers the same way.
        const run = await call(w, 'POST', `/v1/developer/apps/${submission.app_id}/events-url-checks`, {
          token: developer.token,
        });
        expect(run.status).toBe(200);
      } finally {
        await nul.close();
      }
    }
  });

  it('an events URL that does not answer fails both, with the reason', async () => {
    const closed = await startEventsReceiver(() => 200);
    await closed.close();
    const { checks } = await submitTo(closed.url, 'closed');
    expect(checks.events_url_rejects_bad_signature.passed).toBe(false);
    expect(checks.events_url_accepts_signed_test.passed).toBe(false);
    expect(checks.events_url_accepts_signed_test.detail.received).toMatchObject({
      status_code: null,
      error: 'connection_failed',
    });
  });

  it('a proposed events URL behind a private name is refused; one that does not resolve is the checks’ finding', async () => {
    const names: Record<string, string[]> = { 'inside.route-planner.example': ['10.0.0.5'] };
    w.ctx.resolveHost = async (name) => names[name] ?? [];
    try {
      const app = await registerPublishable(w, developer, always200.url);
      const inside = await submit(w, developer, app.id, {
        listing: listing(app.scopes),
        events_url: 'https://inside.route-planner.example/events',
      });
      expect(inside.status).toBe(422);
      expect(inside.body).toMatchObject({
        code: 'app.events_url_not_allowed',
        errors: [{ path: '/events_url' }],
      });
      const nowhere = await submit(w, developer, app.id, {
        listing: listing(app.scopes),
        events_url: 'https://nowhere.route-planner.example/events',
      });
      expect(nowhere.status, nowhere.text).toBe(201);
      const checks = byName(nowhere.body.checks);
      for (const name of ['events_url_rejects_bad_signature', 'events_url_accepts_signed_test']) {
        expect(checks[name]).toMatchObject({ passed: false, detail: { received: { error: 'dns_failed' } } });
      }
    } finally {
      delete w.ctx.resolveHost;
    }
  });

  it('"Check my events URL" runs the checks without submitting', async () => {
    const app = await registerPublishable(w, developer, always401.url);
    const before = always401.received.length;
    const run = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-url-checks`, {
      token: developer.token,
    });
    expect(run.status, run.text).toBe(200);
    const checks = byName(run.body.checks);
    expect(checks.events_url_accepts_signed_test.passed).toBe(false);
    expect(checks.scope_justifications_complete).toMatchObject({
      passed: false,
      detail: { scopes: ['shipments:read', 'webhooks:write'] },
    });
    expect(always401.received.length).toBe(before + 2);

    // After the fix (a proposed URL that verifies), the same button passes; nothing was submitted.
    secrets.verifying = app.events_secret;
    const fixed = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-url-checks`, {
      token: developer.token,
      body: {
        events_url: verifying.url,
        scope_justifications: listing(app.scopes).scope_justifications,
      },
    });
    expect(fixed.status, fixed.text).toBe(200);
    // No icon or screenshot was uploaded for this app: listing_media_valid (test/store/media.test.ts) fails.
    expect(fixed.body.checks.map((c: Json) => c.passed)).toEqual([true, true, true, false]);
    const submissions = await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions`, {
      token: developer.token,
    });
    expect(submissions.body.data).toEqual([]);

    const refused = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-url-checks`, {
      token: developer.token,
      body: { events_url: 'ftp://route-planner.example/events' },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0].path).toBe('/events_url');
    const stranger = await signUpPerson(w, 'Stranger');
    const foreign = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-url-checks`, {
      token: stranger.token,
    });
    expect(foreign.status).toBe(404);
  });

  it('runs at most 30 times a minute for one person', async () => {
    const busy = await signUpPerson(w, 'Busy Developer');
    const app = await registerPublishable(w, busy, always200.url);
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) {
      const run = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-url-checks`, {
        token: busy.token,
      });
      statuses.push(run.status);
      if (run.status === 429) expect(run.body.code).toBe('rate_limited');
    }
    expect(statuses.slice(0, 30)).toEqual(Array(30).fill(200));
    expect(statuses[30]).toBe(429);
    // Another person is not held back.
    const other = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-url-checks`, {
      token: developer.token,
    });
    expect(other.status).toBe(404);
  });
});
