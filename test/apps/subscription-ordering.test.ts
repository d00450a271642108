import { parse as parseToml } from 'smol-toml';
import { describe, expect, it } from 'vitest';
import { manifestToml } from '../../src/modules/apps/manifest.ts';
import {
  deliveriesOf,
  type Received,
  testWorker,
  useWaybillAndReceiver,
  verify,
} from '../delivery/support.ts';
import { call, createCompany, createShipment, type Json, signUpPerson } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';
import { install, registerApp } from './fixtures.ts';

/**
 * Ordering per shipment for app subscriptions (issue 32 item 2, decision 0057): a subscription
 * with `ordering: per_shipment` keeps each shipment's messages in line for each installation, as
 * an endpoint with that ordering does (test/delivery/ordering.test.ts).
 */

const TYPES = ['shipment.created', 'shipment.status_changed'];

function manifestOf(app: Json, subscriptions: unknown[]) {
  return {
    name: app.name,
    description: app.description,
    homepage_url: app.homepage_url,
    privacy_url: app.privacy_url,
    support_url: app.support_url,
    redirect_uris: app.redirect_uris,
    scopes: ['shipments:read'],
    subscriptions,
  };
}

async function postVersion(w: TestWaybill, token: string, app: Json, subscriptions: unknown[]) {
  return call(w, 'POST', `/v1/developer/apps/${app.id}/versions`, {
    token,
    body: { manifest: manifestOf(app, subscriptions) },
  });
}

async function move(w: TestWaybill, token: string, shipmentId: string, status: string) {
  const moved = await call(w, 'POST', `/v1/shipments/${shipmentId}/status`, { token, body: { status } });
  expect(moved.status, moved.text).toBe(200);
}

function shipmentStatus(secret: string, w: TestWaybill, message: Received) {
  const body = verify(message, secret, w.clock.now()) as Json;
  return { installation: body.installation_id, shipment: body.data.shipment.id, status: body.data.status };
}

describe('app subscriptions ordered per shipment', () => {
  const env = useWaybillAndReceiver();

  it('the manifest takes `ordering` as an endpoint does; it shows in the version’s changes and its TOML', async () => {
    const { w, receiver } = env;
    const developer = await signUpPerson(w, 'Ordering Developer');
    const app = await registerApp(w, developer, { scopes: ['shipments:read'] });
    const bad = await postVersion(w, developer.token, app, [
      { event_types: TYPES, url: receiver.url, ordering: 'by_shipment' },
    ]);
    expect(bad.status).toBe(422);
    expect(bad.body.errors.map((e: Json) => e.path)).toContain('/manifest/subscriptions/0/ordering');

    const plain = await postVersion(w, developer.token, app, [{ event_types: TYPES, url: receiver.url }]);
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body.manifest.subscriptions[0].ordering).toBeUndefined();
    const ordered = await postVersion(w, developer.token, app, [
      { event_types: TYPES, url: receiver.url, ordering: 'per_shipment' },
    ]);
    expect(ordered.status, ordered.text).toBe(201);
    expect(ordered.body.manifest.subscriptions[0].ordering).toBe('per_shipment');
    const change = ordered.body.changes.find((c: Json) => c.path === '/subscriptions/0');
    expect(change.to.ordering).toBe('per_shipment');
    const toml = parseToml(manifestToml(app.id, ordered.body.manifest)) as Json;
    expect(toml.subscriptions[0].ordering).toBe('per_shipment');
    // `none` is the default: written out or not, the same manifest.
    const none = await postVersion(w, developer.token, app, [
      { event_types: TYPES, url: receiver.url, ordering: 'none' },
    ]);
    expect(none.status, none.text).toBe(201);
    expect(none.body.manifest.subscriptions).toEqual(plain.body.manifest.subscriptions);
  });

  it("a failing message holds back only its shipment's later messages for that installation; after its retry they arrive in order", async () => {
    const { w, receiver } = env;
    const developer = await signUpPerson(w, 'Ordered Subscriber');
    const app = await registerApp(w, developer, { scopes: ['shipments:read'] });
    const version = await postVersion(w, developer.token, app, [
      { event_types: TYPES, url: receiver.url, ordering: 'per_shipment' },
    ]);
    expect(version.status, version.text).toBe(201);
    const released = await call(
      w,
      'POST',
      `/v1/developer/apps/${app.id}/versions/${version.body.id}/release`,
      { token: developer.token },
    );
    expect(released.status, released.text).toBe(200);
    const company = await createCompany(w, 'Ordered Company');
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
      scopes: ['shipments:read'],
    });
    const target = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select(['id', 'ordering'])
      .where('installation_id', '=', installation.id)
      .where('kind', '=', 'subscription')
      .executeTakeFirstOrThrow();
    expect(target.ordering).toBe('per_shipment');

    const held = await createShipment(w, company.liveToken);
    const flowing = await createShipment(w, company.liveToken);
    for (const status of ['picked_up', 'in_transit']) {
      await move(w, company.liveToken, held.id, status);
      await move(w, company.liveToken, flowing.id, status);
    }
    let refuse = true;
    receiver.answer = (message, res) => {
      const { shipment, status } = shipmentStatus(app.events_secret, w, message);
      if (refuse && shipment === held.id && status === 'confirmed') {
        res.writeHead(500);
        res.end('not now');
        return;
      }
      res.end('ok');
    };
    const start = receiver.received.length;
    const arrived = (shipmentId: string) =>
      receiver.received
        .slice(start)
        .map((m: Received) => shipmentStatus(app.events_secret, w, m))
        .filter((m) => m.shipment === shipmentId);
    const attempts = async () =>
      (await deliveriesOf(w, target.id)).map((d) => d.attempt_count).sort((a, b) => a - b);
    const worker = testWorker(w);
    try {
      await worker.tick();
      // The other shipment went, all of it, in order; the held one only its first message.
      expect(arrived(flowing.id).map((m) => m.status)).toEqual(['confirmed', 'picked_up', 'in_transit']);
      expect(arrived(held.id).map((m) => m.status)).toEqual(['confirmed']);
      for (const m of [...arrived(flowing.id), ...arrived(held.id)])
        expect(m.installation).toBe(installation.id);
      expect(await attempts()).toEqual([0, 0, 1, 1, 1, 1]);

      // Up to its retry (30 s): nothing more of the held shipment goes, however often claimed.
      w.clock.advance(29_999);
      await worker.tick();
      const another = testWorker(w);
      await another.tick();
      await another.stop();
      expect(receiver.received.length - start).toBe(4);
      expect(await attempts()).toEqual([0, 0, 1, 1, 1, 1]);

      refuse = false;
      w.clock.advance(1);
      await worker.tick();
      expect(arrived(held.id).map((m) => m.status)).toEqual([
        'confirmed',
        'confirmed',
        'picked_up',
        'in_transit',
      ]);
      // The messages that waited went on their first attempt.
      expect(await attempts()).toEqual([1, 1, 1, 1, 1, 2]);
    } finally {
      await worker.stop();
      receiver.answer = (_m, res) => res.end('ok');
    }
  });

  it('a release that takes the ordering away lets what waited behind a failing message go at once', async () => {
    const { w, receiver } = env;
    const developer = await signUpPerson(w, 'Unordering Developer');
    const app = await registerApp(w, developer, { scopes: ['shipments:read'] });
    const release = async (subscription: Record<string, unknown>) => {
      const version = await postVersion(w, developer.token, app, [
        { event_types: TYPES, url: receiver.url, ...subscription },
      ]);
      expect(version.status, version.text).toBe(201);
      const released = await call(
        w,
        'POST',
        `/v1/developer/apps/${app.id}/versions/${version.body.id}/release`,
        { token: developer.token },
      );
      expect(released.status, released.text).toBe(200);
    };
    await release({ ordering: 'per_shipment' });
    const company = await createCompany(w, 'Unordered Company');
    await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
      scopes: ['shipments:read'],
    });
    const shipment = await createShipment(w, company.liveToken);
    await move(w, company.liveToken, shipment.id, 'picked_up');
    await move(w, company.liveToken, shipment.id, 'in_transit');
    receiver.answer = (message, res) => {
      const { status } = shipmentStatus(app.events_secret, w, message);
      res.writeHead(status === 'confirmed' ? 500 : 200);
      res.end();
    };
    const start = receiver.received.length;
    const statuses = () =>
      receiver.received
        .slice(start)
        .map((m: Received) => shipmentStatus(app.events_secret, w, m))
        .filter((m) => m.shipment === shipment.id)
        .map((m) => m.status);
    const worker = testWorker(w);
    try {
      await worker.tick();
      expect(statuses()).toEqual(['confirmed']);
      await release({ ordering: 'none' });
      await worker.tick();
      // Out of line: the two that waited go, before the failing one's retry (30 s) is due.
      expect(statuses().sort()).toEqual(['confirmed', 'in_transit', 'picked_up']);
    } finally {
      await worker.stop();
      receiver.answer = (_m, res) => res.end('ok');
    }
  });
});
