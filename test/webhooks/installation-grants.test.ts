import { sql } from 'kysely';
import type * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES, scopesOfRole } from '../../src/modules/accounts/roles.ts';
import { registerApp as registerAppByApi } from '../apps/fixtures.ts';
import { type Receiver, startReceiver, testWorker, verify } from '../delivery/support.ts';
import { discover, obtainTokens, type TestApp } from '../oauth/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient } from '../web/page-client.ts';

/**
 * An installation's endpoints follow its grant (issue 22 items 3 and 4, decision 0024): a real app,
 * registered through the developer API and installed through the consent page and the token
 * endpoint, whose endpoints and events URL are real receivers.
 */
let w: TestWaybill;
let as: oauth.AuthorizationServer;
let developer: Person;
let reviewer: Person;
const receivers: Receiver[] = [];

beforeAll(async () => {
  w = await startWaybill({ env: { WAYBILL_OAUTH_RATE_LIMIT: '1000' } });
  as = await discover(w);
  developer = await signUpPerson(w, 'Developer');
  reviewer = await signUpPerson(w, 'Reviewer');
  // WAYBILL_REVIEWER_EMAILS of the harness lists this address.
  await w.ctx.db
    .updateTable('users')
    .set({ email: 'reviewer@example.test' })
    .where('id', '=', reviewer.id)
    .execute();
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.close();
  await w?.close();
});

async function receiver(status = 200): Promise<Receiver> {
  const r = await startReceiver((_m, res) => {
    res.statusCode = status;
    res.end(status === 200 ? 'ok' : 'no');
  });
  receivers.push(r);
  return r;
}

const REDIRECT = 'http://localhost:8080/callback';

/** An app as its developer registers it, with every scope, its events URL a receiver. */
async function newApp(eventsUrl?: string): Promise<TestApp> {
  const app = await registerAppByApi(w, developer, {
    scopes: ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'],
    redirect_uris: [REDIRECT],
    ...(eventsUrl ? { events_url: eventsUrl } : {}),
  });
  return { clientId: app.id, clientSecret: app.client_secret, redirectUri: REDIRECT, kind: 'confidential' };
}

async function liveCompany(): Promise<CompanyFixture> {
  const company = await createCompany(w, 'Grants Co');
  const live = await call(w, 'POST', `/v1/companies/${company.tenantId}/go-live`, {
    token: company.owner.token,
  });
  expect(live.status).toBe(200);
  return company;
}

async function addMember(company: CompanyFixture, role: 'admin' | 'viewer'): Promise<Person> {
  const person = await signUpPerson(w, `An ${role}`);
  const added = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
    token: company.owner.token,
    body: { email: person.email, role },
  });
  expect(added.status).toBe(201);
  return person;
}

async function appEndpoint(token: string, url: string, eventTypes: string[]) {
  const created = await call(w, 'POST', '/v1/webhook-endpoints', {
    token,
    body: { url, event_types: eventTypes },
  });
  expect(created.status, created.text).toBe(201);
  return created.body as { id: string; secret: string };
}

/** Runs the worker until nothing more is due now; answers the event types each receiver got meanwhile. */
async function deliver(...watched: Receiver[]): Promise<string[][]> {
  const start = watched.map((r) => r.received.length);
  const worker = testWorker(w);
  for (let i = 0; i < 3; i += 1) await worker.tick();
  await worker.stop();
  return watched.map((r, i) => r.received.slice(start[i]).map((m) => String(m.headers['webhook-event'])));
}

async function endpointAsCompany(company: CompanyFixture, id: string) {
  const shown = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
  expect(shown.status).toBe(200);
  return shown.body;
}

describe("an installation's endpoints follow its grant", () => {
  it('the approver leaves: the endpoint receives nothing and says why; approving again brings events back', async () => {
    const company = await liveCompany();
    const app = await newApp();
    const admin = await addMember(company, 'admin');
    const tokens = await obtainTokens(w, as, app, admin, { scope: 'shipments:read webhooks:write' });
    const hook = await receiver();
    const endpoint = await appEndpoint(tokens.access_token, hook.url, ['shipment.created']);

    await createShipment(w, company.liveToken);
    const [first] = await deliver(hook);
    expect(first).toEqual(['shipment.created']);
    expect(await endpointAsCompany(company, endpoint.id)).toMatchObject({
      held_reason: null,
      withheld_event_types: [],
    });
    const earlier = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, {
      token: company.liveToken,
    });
    const deliveryId = earlier.body.data[0].id as string;

    // The approver leaves the company.
    const left = await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${admin.id}`, {
      token: company.owner.token,
    });
    expect(left.status).toBe(204);
    expect(await endpointAsCompany(company, endpoint.id)).toMatchObject({
      enabled: true,
      held_reason: 'needs_approval',
    });
    await createShipment(w, company.liveToken, { recipient_email: 'left@example.com' });
    const [whileHeld] = await deliver(hook);
    expect(whileHeld).toEqual([]);
    const deliveries = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, {
      token: company.liveToken,
    });
    expect(deliveries.body.data).toHaveLength(1);

    // A replay or a test message would send to it all the same: refused, nothing sent.
    const replay = await call(w, 'POST', `/v1/webhook-deliveries/${deliveryId}/replay`, {
      token: company.liveToken,
    });
    expect(replay.status).toBe(409);
    expect(replay.body.code).toBe('installation.needs_approval');
    const test = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, {
      token: company.liveToken,
    });
    expect(test.status).toBe(409);
    expect(test.body.code).toBe('installation.needs_approval');
    expect(hook.received).toHaveLength(1);

    // The dashboard says why, in the list and on the endpoint's page.
    const browser = new PageClient(w);
    browser.cookies.set('waybill_session', company.owner.token);
    const page = await browser.get(`/dashboard/webhooks/${endpoint.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('data-held-reason="needs_approval"');
    expect(page.text).toContain('approve the app again');
    const list = await browser.get('/dashboard/webhooks');
    expect(list.text).toContain('data-held-reason="needs_approval"');
    // The company's installed apps say so too, where a person approves it again.
    const installation = await call(
      w,
      'GET',
      `/v1/companies/${company.tenantId}/installations/${tokens.installation_id}`,
      { token: company.owner.token },
    );
    expect(installation.body.held_reason).toBe('needs_approval');
    const apps = await browser.get('/dashboard/apps');
    expect(apps.text).toContain('data-held-reason="needs_approval"');

    // The owner approves the app again: new events flow again.
    await obtainTokens(w, as, app, company.owner, { scope: 'shipments:read webhooks:write' });
    expect(await endpointAsCompany(company, endpoint.id)).toMatchObject({ held_reason: null });
    const shipment = await createShipment(w, company.liveToken);
    const [again] = await deliver(hook);
    expect(again).toEqual(['shipment.created']);
    const envelope = verify(hook.received.at(-1) as never, endpoint.secret, w.clock.now()) as {
      data: { shipment: { id: string } };
    };
    expect(envelope.data.shipment.id).toBe(shipment.id);
  });

  it('a retry waiting when the approver leaves is not sent: cancelled, and replayable once approved again', async () => {
    const company = await liveCompany();
    const app = await newApp();
    const admin = await addMember(company, 'admin');
    const tokens = await obtainTokens(w, as, app, admin, { scope: 'shipments:read webhooks:write' });
    const hook = await receiver(500);
    const endpoint = await appEndpoint(tokens.access_token, hook.url, ['shipment.created']);
    await createShipment(w, company.liveToken);
    expect(await deliver(hook)).toEqual([['shipment.created']]);
    hook.answer = (_m, res) => res.end('ok');

    await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${admin.id}`, {
      token: company.owner.token,
    });
    w.clock.advance(60 * 60_000);
    expect(await deliver(hook)).toEqual([[]]);
    const listed = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, {
      token: company.liveToken,
    });
    expect(listed.body.data.map((d: { status: string }) => d.status)).toEqual(['cancelled']);
    const refused = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/replay`, {
      token: company.liveToken,
    });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('installation.needs_approval');

    await obtainTokens(w, as, app, company.owner, { scope: 'shipments:read webhooks:write' });
    const replayed = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/replay`, {
      token: company.liveToken,
    });
    expect(replayed.body).toEqual({ replayed: 1 });
    expect(await deliver(hook)).toEqual([['shipment.created']]);
  });

  it('an approval with fewer scopes: only the types those scopes allow are sent, and the endpoint lists the rest', async () => {
    const company = await liveCompany();
    const app = await newApp();
    const tokens = await obtainTokens(w, as, app, company.owner, {
      scope: 'shipments:read webhooks:write',
    });
    const watching = await receiver();
    const gone = await receiver(410);
    const a = await appEndpoint(tokens.access_token, watching.url, [
      'shipment.created',
      'webhook_endpoint.disabled',
    ]);
    const b = await appEndpoint(tokens.access_token, gone.url, ['shipment.created']);

    // Approved again with shipments:read only: no operational events (they need webhooks:read).
    await obtainTokens(w, as, app, company.owner, { scope: 'shipments:read' });
    expect(await endpointAsCompany(company, a.id)).toMatchObject({
      held_reason: null,
      withheld_event_types: ['webhook_endpoint.disabled'],
    });
    await createShipment(w, company.liveToken);
    const [toA, toB] = await deliver(watching, gone);
    expect(toB).toEqual(['shipment.created']);
    // B answered 410 and was disabled; A is told nothing of it.
    expect((await endpointAsCompany(company, b.id)).enabled).toBe(false);
    expect(toA).toEqual(['shipment.created']);
    const test = await call(w, 'POST', `/v1/webhook-endpoints/${a.id}/test`, {
      token: company.liveToken,
      body: { event_type: 'webhook_endpoint.disabled' },
    });
    expect(test.status).toBe(409);
    expect(test.body.code).toBe('installation.scope_not_granted');
    expect(watching.received).toHaveLength(1);

    // Approved again with webhooks:write only: shipment events (with the recipient) stop.
    await obtainTokens(w, as, app, company.owner, { scope: 'webhooks:write' });
    expect(await endpointAsCompany(company, a.id)).toMatchObject({
      held_reason: null,
      withheld_event_types: ['shipment.created'],
    });
    await createShipment(w, company.liveToken, { recipient_email: 'narrow@example.com' });
    const [afterNarrowing] = await deliver(watching);
    expect(afterNarrowing).toEqual([]);
  });

  it('the approver is demoted to viewer: the endpoint keeps only what a viewer may read', async () => {
    const company = await liveCompany();
    const app = await newApp();
    const admin = await addMember(company, 'admin');
    const tokens = await obtainTokens(w, as, app, admin, { scope: 'shipments:read webhooks:write' });
    const hook = await receiver();
    const gone = await receiver(410);
    const endpoint = await appEndpoint(tokens.access_token, hook.url, [
      'shipment.created',
      'webhook_endpoint.disabled',
    ]);
    const sibling = await appEndpoint(tokens.access_token, gone.url, ['shipment.created']);
    // Leave and come back as a viewer (the role that holds shipments:read only).
    await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${admin.id}`, {
      token: company.owner.token,
    });
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: admin.email, role: 'viewer' },
    });
    expect(await endpointAsCompany(company, endpoint.id)).toMatchObject({
      held_reason: null,
      withheld_event_types: ['webhook_endpoint.disabled'],
    });
    await createShipment(w, company.liveToken);
    // The sibling answers 410 and is disabled; telling of it needs webhooks:read, beyond a viewer.
    expect(await deliver(hook, gone)).toEqual([['shipment.created'], ['shipment.created']]);
    expect((await endpointAsCompany(company, sibling.id)).enabled).toBe(false);
  });
});

describe('privacy messages', () => {
  it('go only to installations that may read the shipments now', async () => {
    const company = await liveCompany();
    const readsShipments = await receiver();
    const webhooksOnly = await receiver();
    const approverLeft = await receiver();
    const reader = await newApp(readsShipments.url);
    const watcher = await newApp(webhooksOnly.url);
    const orphan = await newApp(approverLeft.url);
    const readerTokens = await obtainTokens(w, as, reader, company.owner, { scope: 'shipments:read' });
    const watcherTokens = await obtainTokens(w, as, watcher, company.owner, { scope: 'webhooks:read' });
    expect(watcherTokens.scope).toBe('webhooks:read');
    const admin = await addMember(company, 'admin');
    await obtainTokens(w, as, orphan, admin, { scope: 'shipments:read' });
    await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${admin.id}`, {
      token: company.owner.token,
    });
    await createShipment(w, company.liveToken, {
      recipient_email: 'ada@example.com',
      recipient_phone: '+44 20 7946 0001',
    });

    const filed = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'data_request', recipient: { email: 'ada@example.com' } },
    });
    expect(filed.status).toBe(201);
    expect(filed.body.messages.map((m: { installation_id: string }) => m.installation_id)).toEqual([
      readerTokens.installation_id,
    ]);
    const [toReader, toWatcher, toOrphan] = await deliver(readsShipments, webhooksOnly, approverLeft);
    expect(toReader).toEqual(['customer.data_request']);
    expect(toWatcher).toEqual([]);
    expect(toOrphan).toEqual([]);
    expect(webhooksOnly.received.map((m) => m.body).join('')).not.toContain('ada@example.com');
  });
});

describe('a suspended app', () => {
  it("receives nothing from anyone: a company's replay, bulk replay and test send are refused with 409", async () => {
    const company = await liveCompany();
    const app = await newApp();
    const tokens = await obtainTokens(w, as, app, company.owner, {
      scope: 'shipments:read webhooks:write',
    });
    const failing = await receiver(500);
    const endpoint = await appEndpoint(tokens.access_token, failing.url, ['shipment.created']);
    await createShipment(w, company.liveToken);
    await deliver(failing);
    // Disabled by hand: its waiting delivery is cancelled, a bulk replay would take it.
    const disabled = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      token: company.liveToken,
      body: { enabled: false },
    });
    expect(disabled.status).toBe(200);
    const enabled = await call(w, 'PATCH', `/v1/webhook-endpoints/${endpoint.id}`, {
      token: company.liveToken,
      body: { enabled: true },
    });
    expect(enabled.status).toBe(200);
    const before = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, {
      token: company.liveToken,
    });
    expect(before.body.data.map((d: { status: string }) => d.status)).toEqual(['cancelled']);
    const deliveryId = before.body.data[0].id as string;

    const suspended = await call(w, 'POST', `/v1/review/apps/${app.clientId}/suspend`, {
      token: reviewer.token,
      body: { reason: 'leaks data' },
    });
    expect(suspended.status).toBe(200);
    failing.answer = (_m, res) => res.end('ok');
    const sent = failing.received.length;

    const replay = await call(w, 'POST', `/v1/webhook-deliveries/${deliveryId}/replay`, {
      token: company.liveToken,
    });
    expect(replay.status).toBe(409);
    expect(replay.body.code).toBe('app.suspended');
    const bulk = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.id}/deliveries/replay`, {
      token: company.liveToken,
    });
    expect(bulk.status).toBe(409);
    expect(bulk.body.code).toBe('app.suspended');
    const test = await call(w, 'POST', `/v1/webhook-endpoints/${endpoint.id}/test`, {
      token: company.liveToken,
    });
    expect(test.status).toBe(409);
    expect(test.body.code).toBe('app.suspended');
    expect(await endpointAsCompany(company, endpoint.id)).toMatchObject({ held_reason: 'app_suspended' });

    // Nothing changed and nothing went out.
    await deliver(failing);
    expect(failing.received).toHaveLength(sent);
    const after = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, {
      token: company.liveToken,
    });
    expect(after.body.data).toEqual(before.body.data);
  });
});

describe('the rule in the database', () => {
  it("holds each role's scopes as roles.ts does", async () => {
    for (const role of ROLES) {
      const { rows } = await sql<{ scopes: string[] }>`SELECT role_scopes(${role}) AS scopes`.execute(
        w.ctx.db,
      );
      expect([...(rows[0]?.scopes ?? [])].sort(), role).toEqual([...scopesOfRole(role)].sort());
    }
  });
});
