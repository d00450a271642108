import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { install, registerApp } from '../apps/fixtures.ts';
import { drainAll, type Received, type Receiver, startReceiver, verify } from '../delivery/support.ts';
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

/**
 * Decision 0081, issue 51 item 4: app subscriptions and an app's events URL are pinned to an
 * event version as endpoints are; each message is verified with `standardwebhooks` (and checked
 * against its own version's schemas by the suite's message check).
 */

let w: TestWaybill;
let developer: Person;
let company: CompanyFixture;
let receiver: Receiver;

beforeAll(async () => {
  w = await startWaybill();
  developer = await signUpPerson(w, 'Versioned Developer');
  company = await createCompany(w, 'Versioned Company');
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

function manifestOf(app: Json, subscriptions: unknown[]) {
  return {
    name: app.name,
    description: app.description,
    homepage_url: app.homepage_url,
    privacy_url: app.privacy_url,
    support_url: app.support_url,
    redirect_uris: app.redirect_uris,
    scopes: ['shipments:read'],
    events_url: app.events_url,
    subscriptions,
  };
}

async function deploy(app: Json, subscriptions: unknown[]) {
  return call(w, 'POST', `/v1/developer/apps/${app.id}/versions`, {
    token: developer.token,
    body: { manifest: manifestOf(app, subscriptions) },
  });
}

async function release(app: Json, version: Json) {
  const released = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions/${version.id}/release`, {
    token: developer.token,
  });
  expect(released.status, released.text).toBe(200);
}

const on = (r: Receiver, path: string) => `${r.url.replace(/\/$/, '')}${path}`;

describe('app subscriptions pinned to an event version', () => {
  it('each subscription gets its own version; a type its version lacks is 422; redeploying keeps the version', async () => {
    const app = await registerApp(w, developer, { scopes: ['shipments:read'] });
    const oldReceiver = await startReceiver();
    const newReceiver = await startReceiver();
    const oldUrl = oldReceiver.url;
    const newUrl = newReceiver.url;
    try {
      // A type 2026-11-01 lacks, in a subscription pinned to it: refused at its place, nothing made.
      const refused = await deploy(app, [
        { event_types: ['shipment.status_changed'], url: newUrl },
        {
          event_types: ['shipment.status_changed', 'shipment.checkpoint_added'],
          url: oldUrl,
          api_version: '2026-11-01',
        },
      ]);
      expect(refused.status).toBe(422);
      expect(refused.body).toMatchObject({
        code: 'webhook_endpoint.event_type_not_in_version',
        errors: [{ path: '/manifest/subscriptions/1/event_types/1' }],
      });
      const unknownVersion = await deploy(app, [
        { event_types: ['shipment.status_changed'], url: newUrl, api_version: '2027-01-01' },
      ]);
      expect(unknownVersion.status).toBe(422);
      expect(unknownVersion.body.code).toBe('validation.failed');
      expect(
        (await call(w, 'GET', `/v1/developer/apps/${app.id}/versions`, { token: developer.token })).body.data,
      ).toHaveLength(1);

      // A filter names paths of its subscription's version: 2026-11-01 has no carrier.
      const oldFilter = await deploy(app, [
        {
          event_types: ['shipment.status_changed'],
          url: oldUrl,
          api_version: '2026-11-01',
          filter: { 'data.shipment.carrier.code': { eq: 'dhl' } },
        },
      ]);
      expect(oldFilter.status).toBe(422);
      expect(oldFilter.body.code).toBe('filter.unknown_path');

      const version = await deploy(app, [
        { event_types: ['shipment.status_changed'], url: oldUrl, api_version: '2026-11-01' },
        { event_types: ['shipment.status_changed', 'shipment.checkpoint_added'], url: newUrl },
      ]);
      expect(version.status, version.text).toBe(201);
      expect(version.body.manifest.subscriptions.map((s: Json) => s.api_version)).toEqual([
        '2026-11-01',
        '2026-12-01',
      ]);
      await release(app, version.body);
      const installation = await install(w, {
        appId: app.id,
        tenantId: company.tenantId,
        userId: company.owner.id,
        scopes: ['shipments:read'],
      });

      const shipment = await createShipment(w, company.liveToken, { carrier: { code: 'dhl', name: 'DHL' } });
      const checkpoint = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
        token: company.liveToken,
        body: { occurred_at: w.clock.now().toISOString(), message: 'Collected', status: 'picked_up' },
      });
      expect(checkpoint.status, checkpoint.text).toBe(201);
      await drainAll(w);

      const verified = (r: Receiver) =>
        r.received.map((m) => verify(m, app.events_secret, w.clock.now()) as Json);
      const old = verified(oldReceiver);
      const latest = verified(newReceiver);
      expect(old.map((m) => [m.type, m.api_version, m.installation_id])).toEqual([
        ['shipment.status_changed', '2026-11-01', installation.id],
      ]);
      expect(latest.map((m) => [m.type, m.api_version, m.installation_id]).sort()).toEqual([
        ['shipment.checkpoint_added', '2026-12-01', installation.id],
        ['shipment.status_changed', '2026-12-01', installation.id],
      ]);
      const newMove = latest.find((m) => m.type === 'shipment.status_changed');
      expect(newMove.id).toBe(old[0].id);
      expect(old[0].data.shipment).not.toHaveProperty('carrier');
      expect(newMove.data.shipment.carrier).toEqual({ code: 'dhl', name: 'DHL' });
      expect(newMove.data.checkpoint.id).toBe(checkpoint.body.checkpoint.id);

      // The same file again (no api_version written): each subscription keeps the version it had.
      const again = await deploy(app, [
        { event_types: ['shipment.status_changed'], url: oldUrl },
        { event_types: ['shipment.status_changed', 'shipment.checkpoint_added'], url: newUrl },
        { event_types: ['shipment.status_changed'], url: on(receiver, '/third') },
      ]);
      expect(again.status, again.text).toBe(201);
      expect(again.body.manifest.subscriptions.map((s: Json) => s.api_version)).toEqual([
        '2026-11-01',
        '2026-12-01',
        '2026-12-01',
      ]);
      expect(again.body.changes.map((c: Json) => c.path)).toEqual(['/subscriptions/2']);
    } finally {
      await oldReceiver.close();
      await newReceiver.close();
    }
  });
});

describe('a subscription filter in its version', () => {
  it('a 2026-12-01 subscription filters on the carrier, evaluated on the message it gets', async () => {
    const app = await registerApp(w, developer, { scopes: ['shipments:read'] });
    const target = await startReceiver();
    try {
      const version = await deploy(app, [
        {
          event_types: ['shipment.status_changed'],
          url: target.url,
          filter: { 'data.shipment.carrier.code': { eq: 'dhl' } },
        },
      ]);
      expect(version.status, version.text).toBe(201);
      expect(version.body.manifest.subscriptions[0].api_version).toBe('2026-12-01');
      await release(app, version.body);
      const installation = await install(w, {
        appId: app.id,
        tenantId: company.tenantId,
        userId: company.owner.id,
        scopes: ['shipments:read'],
      });
      const dhl = await createShipment(w, company.liveToken, { carrier: { code: 'dhl', name: 'DHL' } });
      const ups = await createShipment(w, company.liveToken, { carrier: { code: 'ups', name: 'UPS' } });
      for (const shipment of [dhl, ups]) {
        const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
          token: company.liveToken,
          body: { status: 'picked_up' },
        });
        expect(moved.status, moved.text).toBe(200);
      }
      await drainAll(w);
      const messages = target.received.map((m) => verify(m, app.events_secret, w.clock.now()) as Json);
      expect(messages.map((m) => [m.type, m.api_version, m.installation_id, m.data.shipment.id])).toEqual([
        ['shipment.status_changed', '2026-12-01', installation.id, dhl.id],
      ]);
      expect(messages[0].data.shipment.carrier).toEqual({ code: 'dhl', name: 'DHL' });
    } finally {
      await target.close();
    }
  });
});

describe("an app's events URL pinned to an event version", () => {
  it('a new app gets the latest; PUT and PATCH set it; app events carry the version of the app', async () => {
    const app = await registerApp(w, developer, { events_url: on(receiver, '/events') });
    expect(app.events_api_version).toBe('2026-12-01');
    const asked = await registerApp(w, developer, { events_api_version: '2026-11-01' });
    expect(asked.events_api_version).toBe('2026-11-01');
    const bad = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: { events_api_version: '2025-01-01' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation.failed');

    const uninstall = async (): Promise<Json> => {
      const installation = await install(w, {
        appId: app.id,
        tenantId: company.tenantId,
        userId: company.owner.id,
      });
      const removed = await call(
        w,
        'DELETE',
        `/v1/companies/${company.tenantId}/installations/${installation.id}`,
        { token: company.owner.token },
      );
      expect(removed.status, removed.text).toBe(204);
      await drainAll(w);
      const message = receiver.received.at(-1) as Received;
      return verify(message, app.events_secret, w.clock.now()) as Json;
    };
    const first = await uninstall();
    expect([first.type, first.api_version]).toEqual(['app.uninstalled', '2026-12-01']);

    const put = await call(w, 'PUT', `/v1/developer/apps/${app.id}/events`, {
      token: developer.token,
      body: { url: on(receiver, '/events'), api_version: '2026-11-01' },
    });
    expect(put.status, put.text).toBe(200);
    expect(put.body.events_api_version).toBe('2026-11-01');
    const second = await uninstall();
    expect([second.type, second.api_version]).toEqual(['app.uninstalled', '2026-11-01']);

    const patched = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: { events_api_version: '2026-12-01' },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(
      (await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token })).body
        .events_api_version,
    ).toBe('2026-12-01');
  });
});
