import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../src/lib/ids.ts';
import { install, issueAppTokens, registerApp } from '../apps/fixtures.ts';
import { type Received, type Receiver, startReceiver, testWorker, verify } from '../delivery/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;
let receiver: Receiver;
let developer: Person;
let reviewer: Person;

beforeAll(async () => {
  w = await startWaybill();
  receiver = await startReceiver();
  developer = await signUpPerson(w, 'Developer');
  reviewer = await signUpPerson(w, 'Reviewer');
  await w.ctx.db
    .updateTable('users')
    .set({ email: 'reviewer@example.test' })
    .where('id', '=', reviewer.id)
    .execute();
  reviewer.email = 'reviewer@example.test';
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

function envelopeOf(message: Received, secret: string) {
  return verify(message, secret, w.clock.now()) as {
    id: string;
    type: string;
    tenant_id: string;
    test?: boolean;
    data: Record<string, unknown>;
  };
}

async function appWithEvents(): Promise<{ id: string; events_secret: string }> {
  return registerApp(w, developer, { events_url: receiver.url });
}

describe('app events', () => {
  it('refuses an events URL the guard refuses, at registration, PATCH and PUT', async () => {
    const bad = { token: developer.token };
    const created = await call(w, 'POST', '/v1/developer/apps', {
      ...bad,
      body: {
        name: 'Metadata',
        description: 'x',
        redirect_uris: ['https://a.example/cb'],
        scopes: ['shipments:read'],
        kind: 'public',
        events_url: 'https://169.254.169.254/latest',
      },
    });
    expect(created.status).toBe(422);
    expect(created.body.code).toBe('app.events_url_not_allowed');
    const app = await appWithEvents();
    for (const [method, path, body] of [
      ['PUT', `/v1/developer/apps/${app.id}/events`, { url: 'https://169.254.169.254/latest' }],
      ['PATCH', `/v1/developer/apps/${app.id}`, { events_url: 'https://[::ffff:10.0.0.1]/x' }],
      ['PUT', `/v1/developer/apps/${app.id}/events`, { url: 'https://10.0.0.1/x' }],
    ] as const) {
      const response = await call(w, method, path, { ...bad, body });
      expect(response.status, path).toBe(422);
      expect(response.body.code).toBe('app.events_url_not_allowed');
    }
    const shown = await call(w, 'GET', `/v1/developer/apps/${app.id}`, bad);
    expect(shown.body.events_url).toBe(receiver.url);
  });

  it('sends app.uninstalled after the tokens and endpoints are gone, signed with the events secret', async () => {
    const company = await createCompany(w);
    const app = await appWithEvents();
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
    });
    const { accessToken } = await issueAppTokens(w, {
      appId: app.id,
      installationId: installation.id,
      userId: company.owner.id,
    });
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: accessToken,
      body: { url: 'http://127.0.0.1:9/hook', event_types: ['shipment.created'] },
    });
    expect(endpoint.status).toBe(201);
    // What the app sees from its receiver when the message arrives: its token already refused.
    const tokenStatusAtArrival: number[] = [];
    receiver.answer = (_m, res) => {
      void call(w, 'GET', '/v1/shipments', { token: accessToken }).then((r) => {
        tokenStatusAtArrival.push(r.status);
        res.end('ok');
      });
    };
    const start = receiver.received.length;
    const removed = await call(
      w,
      'DELETE',
      `/v1/companies/${company.tenantId}/installations/${installation.id}`,
      {
        token: company.owner.token,
      },
    );
    expect(removed.status).toBe(204);
    const worker = testWorker(w);
    await worker.tick();
    await worker.stop();
    receiver.answer = (_m, res) => res.end('ok');

    const messages = receiver.received.slice(start);
    expect(messages).toHaveLength(1);
    const envelope = envelopeOf(messages[0] as Received, app.events_secret);
    expect(envelope.type).toBe('app.uninstalled');
    expect(messages[0]?.headers['webhook-event']).toBe('app.uninstalled');
    expect(envelope.tenant_id).toBe(company.tenantId);
    expect(envelope.data).toEqual({
      installation_id: installation.id,
      customer_account_id: null,
      uninstalled_at: w.clock.now().toISOString(),
    });
    expect(tokenStatusAtArrival).toEqual([401]);
    const gone = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select('id')
      .where('id', '=', endpoint.body.id)
      .executeTakeFirst();
    expect(gone).toBeUndefined();

    const listed = await call(w, 'GET', `/v1/developer/apps/${app.id}/event-messages`, {
      token: developer.token,
    });
    expect(listed.status).toBe(200);
    expect(listed.body.data[0]).toMatchObject({
      event_type: 'app.uninstalled',
      tenant_id: company.tenantId,
      status: 'succeeded',
      test: false,
    });
    expect(listed.body.data[0].attempts[0]).toMatchObject({ status_code: 200, response_body: 'ok' });
  });

  it('signs with both secrets during the 24 h after a rotation, then with the new one only', async () => {
    const app = await appWithEvents();
    const rotated = await call(w, 'POST', `/v1/developer/apps/${app.id}/events-secret/rotate`, {
      token: developer.token,
    });
    expect(rotated.status).toBe(200);
    const start = receiver.received.length;
    const sent = await call(w, 'POST', `/v1/developer/apps/${app.id}/event-messages/test`, {
      token: developer.token,
    });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status_code: 200, error: null });
    const message = receiver.received[start] as Received;
    expect(envelopeOf(message, app.events_secret)).toMatchObject({
      type: 'app.uninstalled',
      test: true,
      tenant_id: '00000000-0000-0000-0000-000000000000',
    });
    expect(envelopeOf(message, rotated.body.secret).type).toBe('app.uninstalled');
    w.clock.advance(24 * 3600_000 + 1000);
    await call(w, 'POST', `/v1/developer/apps/${app.id}/event-messages/test`, { token: developer.token });
    const later = receiver.received[start + 1] as Received;
    expect(() => envelopeOf(later, app.events_secret)).toThrow();
    expect(envelopeOf(later, rotated.body.secret).test).toBe(true);
  });
});

describe('privacy requests', () => {
  let company: CompanyFixture;
  let accounts: { x: string; y: string };
  let apps: { everyone: string; merchantX: string; merchantY: string };
  const EMAIL = 'ada@example.com';

  async function insertShipments(count: number, customerAccountId: string | null, email: string) {
    const now = w.clock.now();
    const rows = Array.from({ length: count }, () => ({
      id: newId('shp'),
      tenant_id: company.tenantId,
      customer_account_id: customerAccountId,
      livemode: true,
      tracking_number: newId('shp'),
      status: 'confirmed',
      external_ref: null,
      recipient_name: 'Ada Lovelace',
      recipient_email: email,
      recipient_phone: '+44 20 7946 0000',
      payment_mode: 'prepaid',
      cod_amount_minor: null,
      currency: 'EUR',
      parcels: JSON.stringify([]),
      exception_reason: null,
      created_at: now,
      updated_at: now,
    }));
    for (let i = 0; i < rows.length; i += 400) {
      await w.ctx.db
        .insertInto('shipments')
        .values(rows.slice(i, i + 400))
        .execute();
    }
    return rows.map((row) => row.id);
  }

  beforeAll(async () => {
    company = await createCompany(w, 'Privacy Co');
    const account = async (name: string) =>
      (
        await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
          token: company.owner.token,
          body: { name },
        })
      ).body.id as string;
    accounts = { x: await account('X'), y: await account('Y') };
    const everyone = await appWithEvents();
    const merchantX = await appWithEvents();
    const merchantY = await appWithEvents();
    apps = { everyone: everyone.id, merchantX: merchantX.id, merchantY: merchantY.id };
    await install(w, { appId: everyone.id, tenantId: company.tenantId, userId: company.owner.id });
    await install(w, {
      appId: merchantX.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
      customerAccountId: accounts.x,
    });
    await install(w, {
      appId: merchantY.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
      customerAccountId: accounts.y,
    });
    await insertShipments(1197, null, 'Ada@Example.com ');
    await insertShipments(3, accounts.x, EMAIL);
    await insertShipments(2, null, 'someone.else@example.com');
  });

  it('tells each app what its installation can see, 500 ids a message, one privacy_request_id', async () => {
    const start = receiver.received.length;
    const filed = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'data_request', recipient: { email: 'ADA@example.com' } },
    });
    expect(filed.status).toBe(201);
    expect(filed.body.id).toMatch(/^prq_/);
    expect(filed.body.shipment_count).toBe(1200);
    const worker = testWorker(w);
    await worker.tick();
    await worker.stop();
    const messages = receiver.received.slice(start).map((m) => JSON.parse(m.body));
    const byApp = (installationApp: string) =>
      filed.body.messages.filter((m: { app_id: string }) => m.app_id === installationApp);
    expect(byApp(apps.everyone).map((m: { shipment_count: number }) => m.shipment_count)).toEqual([
      500, 500, 200,
    ]);
    expect(byApp(apps.merchantX).map((m: { shipment_count: number }) => m.shipment_count)).toEqual([3]);
    expect(byApp(apps.merchantY)).toEqual([]);
    expect(messages).toHaveLength(4);
    for (const message of messages) {
      expect(message.type).toBe('customer.data_request');
      expect(message.data.privacy_request_id).toBe(filed.body.id);
      expect(message.data.shipment_ids.length).toBeLessThanOrEqual(500);
      expect(message.data.recipient).toEqual({ email: EMAIL, phone: null });
    }
    const ids = messages.flatMap((m) => m.data.shipment_ids);
    expect(new Set(ids).size).toBe(1200);
    const shown = await call(
      w,
      'GET',
      `/v1/companies/${company.tenantId}/privacy-requests/${filed.body.id}`,
      {
        token: company.owner.token,
      },
    );
    expect(shown.body.status).toBe('delivered');
    expect(shown.body.messages.every((m: { status: string }) => m.status === 'succeeded')).toBe(true);
  });

  it('refuses a request without a recipient, with a malformed e-mail, or for another company', async () => {
    const path = `/v1/companies/${company.tenantId}/privacy-requests`;
    const before = await w.ctx.db.selectFrom('privacy_requests').select('id').execute();
    for (const recipient of [
      {},
      { email: null, phone: null },
      { email: 'not-an-email' },
      { phone: 'call me' },
    ]) {
      const response = await call(w, 'POST', path, {
        token: company.owner.token,
        body: { kind: 'redact', recipient },
      });
      expect(response.status, JSON.stringify(recipient)).toBe(400);
      expect(response.headers['content-type']).toContain('application/problem+json');
    }
    const stranger = await createCompany(w, 'Stranger');
    const foreign = await call(w, 'POST', path, {
      token: stranger.owner.token,
      body: { kind: 'redact', recipient: { email: EMAIL } },
    });
    expect([403, 404]).toContain(foreign.status);
    expect(await w.ctx.db.selectFrom('privacy_requests').select('id').execute()).toHaveLength(before.length);
  });

  it('redacts the recipient from Waybill shipments and says so when no app can see them', async () => {
    const only = await insertShipments(1, accounts.y, 'grace@example.com');
    const filed = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'redact', recipient: { email: 'grace@example.com' } },
    });
    expect(filed.status).toBe(201);
    // The company-wide app and merchant Y's could see it; merchant X's could not.
    expect(filed.body.messages.map((m: { app_id: string }) => m.app_id).sort()).toEqual(
      [apps.everyone, apps.merchantY].sort(),
    );
    const shipment = await call(w, 'GET', `/v1/shipments/${only[0]}`, { token: company.liveToken });
    expect(shipment.body).toMatchObject({
      recipient_name: '[redacted]',
      recipient_email: null,
      recipient_phone: null,
    });
    expect(shipment.body.tracking_number).toBeTruthy();

    const nobody = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'data_request', recipient: { phone: '+1 555 0100' } },
    });
    expect(nobody.status).toBe(201);
    expect(nobody.body).toMatchObject({ status: 'no_apps_to_tell', shipment_count: 0, messages: [] });
  });
});

describe('suspension', () => {
  it('stops tokens, endpoints and app events at once; reinstating sends what was held', async () => {
    // What earlier tests left queued goes first.
    const earlier = testWorker(w);
    await earlier.tick();
    await earlier.stop();
    const company = await createCompany(w);
    const app = await appWithEvents();
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
    });
    const { accessToken } = await issueAppTokens(w, {
      appId: app.id,
      installationId: installation.id,
      userId: company.owner.id,
    });
    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: accessToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(endpoint.status).toBe(201);
    await createShipment(w, company.liveToken, { recipient_email: 'held@example.com' });
    await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'data_request', recipient: { email: 'held@example.com' } },
    });

    const refused = await call(w, 'POST', `/v1/review/apps/${app.id}/suspend`, {
      token: developer.token,
      body: { reason: 'not a reviewer' },
    });
    expect(refused.status).toBe(403);
    const suspended = await call(w, 'POST', `/v1/review/apps/${app.id}/suspend`, {
      token: reviewer.token,
      body: { reason: 'sends spam' },
    });
    expect(suspended.status).toBe(200);
    expect(suspended.body.status).toBe('suspended');
    expect((await call(w, 'GET', '/v1/shipments', { token: accessToken })).status).toBe(401);

    const start = receiver.received.length;
    const worker = testWorker(w);
    await worker.tick();
    expect(receiver.received.slice(start).map((m) => m.headers['webhook-event'])).toEqual([]);

    const reinstated = await call(w, 'POST', `/v1/review/apps/${app.id}/reinstate`, {
      token: reviewer.token,
      body: { reason: 'fixed' },
    });
    expect(reinstated.body.status).toBe('private');
    expect((await call(w, 'GET', '/v1/shipments', { token: accessToken })).status).toBe(200);
    await worker.tick();
    await worker.stop();
    const types = receiver.received
      .slice(start)
      .map((m) => m.headers['webhook-event'])
      .sort();
    expect(types).toEqual(['customer.data_request', 'shipment.created']);
    const audit = await w.ctx.db
      .selectFrom('audit_events')
      .select('action')
      .where('actor', '=', reviewer.id)
      .execute();
    expect(audit.map((a) => a.action)).toEqual(expect.arrayContaining(['app.suspended', 'app.reinstated']));
  });
});
