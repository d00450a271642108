import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testWorker } from '../delivery/support.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  createShipment,
  type Json,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { createMerchant, type Receiver, startReceiver, verify } from '../webhooks/api/support.ts';
import { install, issueAppTokens, registerApp } from './fixtures.ts';

/**
 * App subscriptions (CONTRACT.md "Apps as code"): a manifest's subscriptions reach every
 * installation in force, on the delivery engine, signed with the app's events secret.
 */

let w: TestWaybill;
let developer: Person;
let receiver: Receiver;
let app: Json;
let companyA: CompanyFixture;
let companyB: CompanyFixture;
let merchantB: { accountId: string; token: string };
let installationA: string;
let installationB: string;

beforeAll(async () => {
  w = await startWaybill();
  developer = await signUpPerson(w, 'Subscribing Developer');
  receiver = await startReceiver('/subscription');
  app = await registerApp(w, developer, { scopes: ['shipments:read'] });
  companyA = await createCompany(w, 'Company A');
  companyB = await createCompany(w, 'Company B');
  merchantB = await createMerchant(w, companyB);
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

async function deploy(subscriptions: unknown[]): Promise<Json> {
  const { kind: _kind, client_secret: _s, events_secret: _e, ...rest } = app;
  const manifest = {
    name: rest.name,
    description: rest.description,
    homepage_url: rest.homepage_url,
    privacy_url: rest.privacy_url,
    support_url: rest.support_url,
    redirect_uris: rest.redirect_uris,
    scopes: ['shipments:read'],
    subscriptions,
  };
  const created = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions`, {
    token: developer.token,
    body: { manifest },
  });
  expect(created.status, created.text).toBe(201);
  return created.body;
}

async function release(version: Json) {
  const released = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions/${version.id}/release`, {
    token: developer.token,
  });
  expect(released.status, released.text).toBe(200);
}

/** Sends everything due and returns what arrived since, verified with the app's events secret. */
async function deliverAll(): Promise<Json[]> {
  const before = receiver.received.length;
  const worker = testWorker(w);
  try {
    while ((await worker.tick()) > 0) {}
  } finally {
    await worker.stop();
  }
  return receiver.received.slice(before).map((message) => verify(app.events_secret, message, w.clock.now()));
}

async function move(token: string, shipmentId: string, status: string) {
  const moved = await call(w, 'POST', `/v1/shipments/${shipmentId}/status`, { token, body: { status } });
  expect(moved.status, moved.text).toBe(200);
}

describe('app subscriptions', () => {
  it('each installation in force gets its events once, signed, the merchant installation only its account’s', async () => {
    const v2 = await deploy([
      { event_types: ['shipment.created', 'shipment.status_changed'], url: receiver.url },
    ]);
    await release(v2);
    installationA = (
      await install(w, {
        appId: app.id,
        tenantId: companyA.tenantId,
        userId: companyA.owner.id,
        scopes: ['shipments:read'],
      })
    ).id;
    installationB = (
      await install(w, {
        appId: app.id,
        tenantId: companyB.tenantId,
        userId: companyB.owner.id,
        customerAccountId: merchantB.accountId,
        scopes: ['shipments:read'],
      })
    ).id;

    const inA = await createShipment(w, companyA.liveToken);
    const inMerchantB = await createShipment(w, merchantB.token);
    await createShipment(w, companyB.liveToken); // the company's own: not the merchant's
    await createShipment(w, companyA.testToken); // sandbox: test_events is false

    const arrived = await deliverAll();
    const seen = arrived.map((m) => [m.installation_id, m.type, m.data.shipment.id]);
    expect(seen.sort()).toEqual(
      [
        [installationA, 'shipment.created', inA.id],
        [installationB, 'shipment.created', inMerchantB.id],
      ].sort(),
    );
    for (const message of arrived) expect(message.livemode).toBe(true);
    // Nothing of it is a company endpoint.
    const listed = await call(w, 'GET', '/v1/webhook-endpoints', { token: companyA.liveToken });
    expect(listed.body.data).toEqual([]);
    // The developer console counts them apart from endpoint deliveries.
    const stats = await call(w, 'GET', `/v1/developer/apps/${app.id}/stats?window=24h`, {
      token: developer.token,
    });
    expect(stats.status, stats.text).toBe(200);
    expect(stats.body.subscriptions).toEqual({ attempts: 2, success_rate: 1, failing: 0 });
    expect(stats.body.endpoints.attempts).toBe(0);
  });

  it('a release with a filter sends only matching events; releasing the earlier version restores them', async () => {
    const shipment = await createShipment(w, companyA.liveToken);
    await deliverAll();
    const filtered = await deploy([
      {
        event_types: ['shipment.created', 'shipment.status_changed'],
        url: receiver.url,
        filter: { 'data.shipment.status': { eq: 'in_transit' } },
      },
    ]);
    await release(filtered);
    await move(companyA.liveToken, shipment.id, 'picked_up');
    await move(companyA.liveToken, shipment.id, 'in_transit');
    const matching = await deliverAll();
    expect(matching.map((m) => [m.type, m.data.status, m.installation_id])).toEqual([
      ['shipment.status_changed', 'in_transit', installationA],
    ]);

    const versions = await call(w, 'GET', `/v1/developer/apps/${app.id}/versions`, {
      token: developer.token,
    });
    const unfiltered = versions.body.data.find((v: Json) => v.number === 2);
    await release(unfiltered);
    await move(companyA.liveToken, shipment.id, 'out_for_delivery');
    const restored = await deliverAll();
    expect(restored.map((m) => [m.type, m.data.status])).toEqual([
      ['shipment.status_changed', 'out_for_delivery'],
    ]);

    // A version without subscriptions stops them.
    const none = await deploy([]);
    await release(none);
    await move(companyA.liveToken, shipment.id, 'delivered');
    expect(await deliverAll()).toEqual([]);
  });

  it('the approver leaving holds that installation’s events; a grant without the scope gets none', async () => {
    const v = await deploy([{ event_types: ['shipment.created'], url: receiver.url }]);
    await release(v);
    const company = await createCompany(w, 'Company C');
    const admin = await signUpPerson(w, 'Approving Admin');
    const added = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: admin.email, role: 'admin' },
    });
    expect(added.status).toBe(201);
    const held = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: admin.id,
      scopes: ['shipments:read'],
    });
    const before = await createShipment(w, company.liveToken);
    expect((await deliverAll()).map((m) => [m.installation_id, m.data.shipment.id])).toEqual([
      [held.id, before.id],
    ]);

    const left = await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/${admin.id}`, {
      token: company.owner.token,
    });
    expect(left.status).toBe(204);
    await createShipment(w, company.liveToken);
    // Company A's installation still receives its own.
    const stillA = await createShipment(w, companyA.liveToken);
    expect((await deliverAll()).map((m) => [m.installation_id, m.data.shipment.id])).toEqual([
      [installationA, stillA.id],
    ]);

    const narrow = await createCompany(w, 'Company D');
    const narrowed = await install(w, {
      appId: app.id,
      tenantId: narrow.tenantId,
      userId: narrow.owner.id,
      scopes: ['webhooks:write'],
    });
    await createShipment(w, narrow.liveToken);
    expect(await deliverAll()).toEqual([]);

    const effective = async (installationId: string) => {
      const answer = await call(
        w,
        'GET',
        `/v1/developer/apps/${app.id}/installations/${installationId}/subscriptions`,
        {
          token: developer.token,
        },
      );
      expect(answer.status, answer.text).toBe(200);
      return answer.body;
    };
    expect((await effective(held.id)).data).toMatchObject([
      { index: 0, active: false, withheld_event_types: ['shipment.created'], reason: 'needs_approval' },
    ]);
    expect((await effective(narrowed.id)).data).toMatchObject([
      { active: false, withheld_event_types: ['shipment.created'], reason: 'scope_not_granted' },
    ]);
    expect((await effective(installationA)).data).toMatchObject([
      { active: true, withheld_event_types: [], reason: null, url: receiver.url },
    ]);
    const foreign = await call(
      w,
      'GET',
      `/v1/developer/apps/${app.id}/installations/inst_nothing/subscriptions`,
      {
        token: developer.token,
      },
    );
    expect(foreign.status).toBe(404);
  });

  it('the developer lists the deliveries by installation, status and type, and replays one', async () => {
    const list = (query: string) =>
      call(w, 'GET', `/v1/developer/apps/${app.id}/subscription-deliveries${query}`, {
        token: developer.token,
      });
    const ofB = await list(`?installation_id=${installationB}`);
    expect(ofB.status).toBe(200);
    expect(ofB.body.data).toHaveLength(1);
    const [delivery] = ofB.body.data;
    expect(delivery).toMatchObject({
      installation_id: installationB,
      customer_account_id: merchantB.accountId,
      event_type: 'shipment.created',
      status: 'succeeded',
      livemode: true,
      url: receiver.url,
    });
    expect(delivery.attempts).toHaveLength(1);
    expect(
      (await list('?event_type=shipment.status_changed&status=succeeded')).body.data.length,
    ).toBeGreaterThan(0);
    expect((await list('?status=failed')).body.data).toEqual([]);

    const before = receiver.received.length;
    const replayed = await call(
      w,
      'POST',
      `/v1/developer/apps/${app.id}/subscription-deliveries/${delivery.id}/replay`,
      { token: developer.token },
    );
    expect(replayed.status, replayed.text).toBe(200);
    expect(replayed.body.status_code).toBe(200);
    const again = receiver.received.slice(before);
    expect(again.map((m) => m.headers['webhook-id'])).toEqual([delivery.event_id]);
    expect(verify(app.events_secret, again[0] as never, w.clock.now())).toMatchObject({
      installation_id: installationB,
    });

    const other = await signUpPerson(w, 'Someone Else');
    expect(
      (await call(w, 'GET', `/v1/developer/apps/${app.id}/subscription-deliveries`, { token: other.token }))
        .status,
    ).toBe(404);
    const unknown = await call(
      w,
      'POST',
      `/v1/developer/apps/${app.id}/subscription-deliveries/dlv_nothing/replay`,
      {
        token: developer.token,
      },
    );
    expect(unknown.status).toBe(404);
  });

  it('the app reads its installation and mutes a type for it alone', async () => {
    const { accessToken } = await issueAppTokens(w, {
      appId: app.id,
      installationId: installationA,
      userId: companyA.owner.id,
      scopes: ['shipments:read'],
    });
    const read = await call(w, 'GET', '/v1/installation', { token: accessToken });
    expect(read.status, read.text).toBe(200);
    expect(read.body).toMatchObject({
      id: installationA,
      app_id: app.id,
      tenant_id: companyA.tenantId,
      customer_account_id: null,
      scopes: ['shipments:read'],
      muted_event_types: [],
      subscriptions: [{ event_types: ['shipment.created'], active: true, reason: null }],
    });

    const unknown = await call(w, 'PATCH', '/v1/installation', {
      token: accessToken,
      body: { muted_event_types: ['shipment.teleported'] },
    });
    expect(unknown.status).toBe(422);
    expect(unknown.body.errors[0].path).toBe('/muted_event_types/0');
    const byApiToken = await call(w, 'GET', '/v1/installation', { token: companyA.liveToken });
    expect(byApiToken.status).toBe(403);

    const muted = await call(w, 'PATCH', '/v1/installation', {
      token: accessToken,
      body: { muted_event_types: ['shipment.created'] },
    });
    expect(muted.status, muted.text).toBe(200);
    expect(muted.body.subscriptions[0]).toMatchObject({
      active: false,
      withheld_event_types: ['shipment.created'],
      reason: 'muted',
    });
    await createShipment(w, companyA.liveToken);
    const inB = await createShipment(w, merchantB.token);
    expect((await deliverAll()).map((m) => [m.installation_id, m.data.shipment.id])).toEqual([
      [installationB, inB.id],
    ]);

    await call(w, 'PATCH', '/v1/installation', { token: accessToken, body: { muted_event_types: [] } });
    const inA = await createShipment(w, companyA.liveToken);
    expect((await deliverAll()).map((m) => [m.installation_id, m.data.shipment.id])).toEqual([
      [installationA, inA.id],
    ]);
  });

  it('bulk replay queues again what failed or was cancelled, of one installation or all, and only that', async () => {
    const v = await deploy([{ event_types: ['shipment.created'], url: receiver.url }]);
    await release(v);
    receiver.answer = { status: 500, body: 'down' };
    const inA = await createShipment(w, companyA.liveToken);
    const inB = await createShipment(w, merchantB.token);
    expect((await deliverAll()).map((m) => m.data.shipment.id).sort()).toEqual([inA.id, inB.id].sort());
    // The subscription taken away cancels what waits for it; the next version brings it back.
    await release(await deploy([]));
    receiver.answer = { status: 200, body: 'ok' };
    await release(await deploy([{ event_types: ['shipment.created'], url: receiver.url }]));
    expect(await deliverAll()).toEqual([]);
    const cancelled = await call(
      w,
      'GET',
      `/v1/developer/apps/${app.id}/subscription-deliveries?status=cancelled`,
      {
        token: developer.token,
      },
    );
    expect(cancelled.body.data.map((d: Json) => d.installation_id).sort()).toEqual(
      [installationA, installationB].sort(),
    );

    const bulk = (query = '', token = developer.token) =>
      call(w, 'POST', `/v1/developer/apps/${app.id}/subscription-deliveries/replay${query}`, { token });
    const ofA = await bulk(`?installation_id=${installationA}`);
    expect(ofA.status, ofA.text).toBe(200);
    expect(ofA.body).toEqual({ replayed: 1 });
    const first = await deliverAll();
    expect(first.map((m) => [m.installation_id, m.data.shipment.id])).toEqual([[installationA, inA.id]]);
    const rest = await bulk();
    expect(rest.body).toEqual({ replayed: 1 });
    expect((await deliverAll()).map((m) => [m.installation_id, m.data.shipment.id])).toEqual([
      [installationB, inB.id],
    ]);
    // Nothing failed is left; a stranger and a bad installation id change nothing.
    expect((await bulk()).body).toEqual({ replayed: 0 });
    const stranger = await signUpPerson(w, 'Bulk Stranger');
    expect((await bulk('', stranger.token)).status).toBe(404);
    expect((await bulk('?installation_id=%00')).status).toBe(400);
  });

  it('a subscription’s rate_limit is each installation’s target’s, as an endpoint’s; a bad one is refused', async () => {
    const limited = await deploy([{ event_types: ['shipment.created'], url: receiver.url, rate_limit: 5 }]);
    expect(limited.manifest.subscriptions[0].rate_limit).toBe(5);
    await release(limited);
    const targets = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select(['installation_id', 'rate_limit'])
      .where('app_id', '=', app.id)
      .where('kind', '=', 'subscription')
      .where('enabled', '=', true)
      .execute();
    expect(targets.map((t) => t.installation_id)).toEqual(
      expect.arrayContaining([installationA, installationB]),
    );
    expect(targets.map((t) => t.rate_limit)).toEqual(targets.map(() => 5));
    const bad = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions`, {
      token: developer.token,
      body: {
        manifest: {
          ...limited.manifest,
          subscriptions: [{ ...limited.manifest.subscriptions[0], rate_limit: 0 }],
        },
      },
    });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body.errors)).toContain('rate_limit');
    // Without it, the targets are unlimited again.
    await release(await deploy([{ event_types: ['shipment.created'], url: receiver.url }]));
    const after = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select('rate_limit')
      .where('app_id', '=', app.id)
      .where('kind', '=', 'subscription')
      .where('enabled', '=', true)
      .execute();
    expect(after.map((t) => t.rate_limit)).toEqual(targets.map(() => null));
  });
});
