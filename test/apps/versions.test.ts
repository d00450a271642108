import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  listing,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signUpAs,
  startEventsReceiver,
  submitAndDecide,
} from '../store/support.ts';
import { call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { APP_BODY, registerApp } from './fixtures.ts';

let w: TestWaybill;
let developer: Person;
let other: Person;
let reviewer: Person;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Manifest Developer');
  other = await signUpPerson(w, 'Another Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  receiver = await startEventsReceiver(() => 200);
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

const { kind: _kind, ...APP_FIELDS } = APP_BODY;

function manifest(overrides: Record<string, unknown> = {}) {
  return { ...APP_FIELDS, optional_scopes: [], events_url: null, subscriptions: [], ...overrides };
}

const versionsOf = (appId: string, who = developer) =>
  call(w, 'GET', `/v1/developer/apps/${appId}/versions`, { token: who.token });
const postVersion = (appId: string, body: unknown, who = developer) =>
  call(w, 'POST', `/v1/developer/apps/${appId}/versions`, { token: who.token, body });
const release = (appId: string, versionId: string, who = developer) =>
  call(w, 'POST', `/v1/developer/apps/${appId}/versions/${versionId}/release`, { token: who.token });
const appOf = async (appId: string) =>
  (await call(w, 'GET', `/v1/developer/apps/${appId}`, { token: developer.token })).body;

describe('app versions', () => {
  it('a new app has version 1, active, made from its fields', async () => {
    const app = await registerApp(w, developer);
    const list = await versionsOf(app.id);
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    const [v1] = list.body.data;
    expect(v1).toMatchObject({ number: 1, status: 'active', manifest: manifest() });
    expect(v1.id).toMatch(/^apv_/);
    expect(v1.changes).toEqual([]);
    const one = await call(w, 'GET', `/v1/developer/apps/${app.id}/versions/${v1.id}`, {
      token: developer.token,
    });
    expect(one.body).toEqual(v1);
  });

  it('a draft lists its changes; release makes it active and the app follows; releasing v1 rolls back', async () => {
    const app = await registerApp(w, developer);
    const next = manifest({
      name: 'Carrier Sync 2',
      scopes: ['shipments:read', 'webhooks:write'],
      optional_scopes: ['shipments:write'],
      subscriptions: [
        {
          event_types: ['shipment.status_changed'],
          url: receiver.url,
          filter: { 'data.shipment.status': { in: ['delivered', 'exception'] } },
        },
      ],
    });
    const created = await postVersion(app.id, { manifest: next, message: 'Subscribe to statuses' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ number: 2, status: 'draft', message: 'Subscribe to statuses' });
    expect(created.body.changes).toEqual([
      { path: '/name', from: 'Carrier Sync', to: 'Carrier Sync 2' },
      { path: '/optional_scopes', from: [], to: ['shipments:write'] },
      {
        path: '/subscriptions/0',
        from: null,
        // A new subscription is pinned to the latest event version (decision 0081).
        to: { ...(next.subscriptions as Json[])[0], test_events: false, api_version: '2026-12-01' },
      },
    ]);
    // A draft changes nothing.
    expect((await appOf(app.id)).name).toBe('Carrier Sync');

    const released = await release(app.id, created.body.id);
    expect(released.status).toBe(200);
    expect(released.body).toMatchObject({ number: 2, status: 'active' });
    expect((await appOf(app.id)).name).toBe('Carrier Sync 2');

    const versions = (await versionsOf(app.id)).body.data;
    expect(versions.map((v: Json) => [v.number, v.status])).toEqual([
      [2, 'active'],
      [1, 'superseded'],
    ]);
    const rollback = await release(app.id, versions[1].id);
    expect(rollback.status).toBe(200);
    expect(rollback.body.status).toBe('active');
    expect((await appOf(app.id)).name).toBe('Carrier Sync');
    // Releasing the active version again changes nothing.
    expect((await release(app.id, versions[1].id)).body.status).toBe('active');
    const after = (await versionsOf(app.id)).body.data;
    expect(after.map((v: Json) => [v.number, v.status])).toEqual([
      [2, 'superseded'],
      [1, 'active'],
    ]);
  });

  it('a change through PATCH is recorded as a new active version', async () => {
    const app = await registerApp(w, developer);
    const patched = await call(w, 'PATCH', `/v1/developer/apps/${app.id}`, {
      token: developer.token,
      body: { description: 'Now with returns' },
    });
    expect(patched.status).toBe(200);
    const versions = (await versionsOf(app.id)).body.data;
    expect(versions[0]).toMatchObject({
      number: 2,
      status: 'active',
      changes: [{ path: '/description', from: APP_BODY.description, to: 'Now with returns' }],
    });
  });

  it('bad manifests get 422 with the path of each problem, and nothing is stored', async () => {
    const app = await registerApp(w, developer);
    const cases: Array<[unknown, string, string]> = [
      [{ ...manifest(), colour: 'blue' }, 'validation.failed', '/manifest/colour'],
      [manifest({ name: 5 }), 'validation.failed', '/manifest/name'],
      [manifest({ redirect_uris: ['ftp://x.example/cb'] }), 'validation.failed', '/manifest/redirect_uris/0'],
      [manifest({ scopes: ['shipments:fly'] }), 'validation.failed', '/manifest/scopes'],
      [manifest({ optional_scopes: ['nope'] }), 'validation.failed', '/manifest/optional_scopes/0'],
      [
        manifest({ subscriptions: [{ event_types: ['shipment.teleported'], url: receiver.url }] }),
        'validation.failed',
        '/manifest/subscriptions/0/event_types/0',
      ],
      [
        manifest({ subscriptions: [{ event_types: ['shipment.created'], url: 'http://example.com/x' }] }),
        'validation.failed',
        '/manifest/subscriptions/0/url',
      ],
      [
        manifest({
          subscriptions: [
            {
              event_types: ['shipment.created'],
              url: receiver.url,
              filter: { 'data.shipment.colour': { eq: 'x' } },
            },
          ],
        }),
        'filter.unknown_path',
        '/manifest/subscriptions/0/filter/data.shipment.colour',
      ],
      [
        manifest({
          scopes: ['webhooks:write'],
          subscriptions: [{ event_types: ['shipment.created'], url: receiver.url }],
        }),
        'app_config.scope_missing',
        '/manifest/subscriptions/0/event_types/0',
      ],
    ];
    for (const [body, code, path] of cases) {
      const refused = await postVersion(app.id, { manifest: body });
      expect(refused.status, JSON.stringify(body)).toBe(422);
      expect(refused.body.code).toBe(code);
      expect(refused.body.errors.map((e: Json) => e.path)).toContain(path);
    }
    expect((await versionsOf(app.id)).body.data).toHaveLength(1);
  });

  it('someone else’s app does not exist for them; without a session token nothing is read', async () => {
    const app = await registerApp(w, developer);
    expect((await versionsOf(app.id, other)).status).toBe(404);
    expect((await postVersion(app.id, { manifest: manifest() }, other)).status).toBe(404);
    const anonymous = await call(w, 'POST', `/v1/developer/apps/${app.id}/versions`, {
      body: { manifest: 1 },
    });
    expect(anonymous.status).toBe(401);
    const v1 = (await versionsOf(app.id)).body.data[0];
    expect((await release(app.id, v1.id, other)).status).toBe(404);
    const missing = await release(app.id, 'apv_nothing');
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('app_version.not_found');
  });
});

const FILTER = { 'data.shipment.status': { in: ['delivered'] } };

/** A published app's first subscription, through review (a submission naming the version); its manifest then. */
async function subscribeThroughReview(appId: string, from: Json): Promise<Json> {
  const subscribing = await postVersion(appId, {
    manifest: {
      ...from,
      subscriptions: [{ event_types: ['shipment.delivered', 'shipment.status_changed'], url: receiver.url }],
    },
  });
  expect(subscribing.body.changes.map((c: Json) => c.path)).toEqual(['/subscriptions/0']);
  const refused = await release(appId, subscribing.body.id);
  expect(refused.status).toBe(409);
  expect(refused.body.fields).toEqual(['subscriptions/0']);
  const scopes = from.scopes;
  const decided = await submitAndDecide(
    w,
    developer,
    reviewer,
    appId,
    { listing: listing(scopes), version_id: subscribing.body.id },
    'approved',
  );
  expect(decided).toMatchObject({ status: 'approved', version_id: subscribing.body.id });
  return subscribing.body.manifest;
}

describe('app versions of a published app', () => {
  it('a reviewed change goes through review: 409 on release, approval of the submission releases it', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    await submitAndDecide(w, developer, reviewer, app.id, { listing: listing(app.scopes) }, 'approved');
    const published = await appOf(app.id);
    expect(published.status).toBe('published');
    const active = (await versionsOf(app.id)).body.data[0];

    // A subscription's filter and test flag are not reviewed: a version changing only them releases at once.
    const subscribed = await subscribeThroughReview(app.id, active.manifest);
    const filtered = await postVersion(app.id, {
      manifest: {
        ...subscribed,
        subscriptions: [{ ...subscribed.subscriptions[0], filter: FILTER, test_events: true }],
      },
    });
    expect(filtered.body.changes.map((c: Json) => c.path)).toEqual(['/subscriptions/0']);
    expect((await release(app.id, filtered.body.id)).status).toBe(200);
    const subscribing = filtered;

    const renamed = await postVersion(app.id, {
      manifest: { ...subscribing.body.manifest, name: 'Route Planner Pro' },
    });
    const refused = await release(app.id, renamed.body.id);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('app.published_requires_review');
    expect(refused.body.fields).toEqual(['name']);
    expect((await appOf(app.id)).name).toBe('Route Planner');

    const decided = await submitAndDecide(
      w,
      developer,
      reviewer,
      app.id,
      { listing: listing(app.scopes), version_id: renamed.body.id },
      'approved',
    );
    expect(decided).toMatchObject({ status: 'approved', version_id: renamed.body.id });
    expect(decided.app.name).toBe('Route Planner Pro');
    expect((await appOf(app.id)).name).toBe('Route Planner Pro');
    const versions = (await versionsOf(app.id)).body.data;
    expect(versions[0]).toMatchObject({ id: renamed.body.id, status: 'active' });
    expect(versions.filter((v: Json) => v.status === 'active')).toHaveLength(1);
  });

  it('a subscription goes where review saw it: a new URL (host or path), other event types, one added or removed answer 409', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    await submitAndDecide(w, developer, reviewer, app.id, { listing: listing(app.scopes) }, 'approved');
    const subscribed = await subscribeThroughReview(app.id, (await versionsOf(app.id)).body.data[0].manifest);
    const [reviewed] = subscribed.subscriptions;
    const elsewhere = receiver.url.replace('127.0.0.1', '127.0.0.2');
    const cases: Array<[Json[], string[]]> = [
      [[{ ...reviewed, url: elsewhere }], ['subscriptions/0/url']],
      [[{ ...reviewed, url: `${receiver.url}/v2` }], ['subscriptions/0/url']],
      [
        [{ ...reviewed, event_types: ['shipment.delivered', 'shipment.created'] }],
        ['subscriptions/0/event_types'],
      ],
      [
        [{ ...reviewed, url: elsewhere, event_types: ['shipment.created'] }],
        ['subscriptions/0/url', 'subscriptions/0/event_types'],
      ],
      [[reviewed, { ...reviewed, filter: FILTER }], ['subscriptions/1']],
      [[], ['subscriptions/0']],
    ];
    for (const [subscriptions, fields] of cases) {
      const draft = await postVersion(app.id, { manifest: { ...subscribed, subscriptions } });
      expect(draft.status, JSON.stringify(draft.body)).toBe(201);
      const refused = await release(app.id, draft.body.id);
      expect(refused.status, JSON.stringify(subscriptions)).toBe(409);
      expect(refused.body.code).toBe('app.published_requires_review');
      expect(refused.body.fields).toEqual(fields);
    }
    const active = (await versionsOf(app.id)).body.data.find((v: Json) => v.status === 'active');
    expect(active.manifest.subscriptions).toEqual(subscribed.subscriptions);

    // The types in another order, a filter: released at once.
    const samePlace = await postVersion(app.id, {
      manifest: {
        ...subscribed,
        subscriptions: [
          {
            ...reviewed,
            event_types: [...reviewed.event_types].reverse(),
            filter: FILTER,
          },
        ],
      },
    });
    expect((await release(app.id, samePlace.body.id)).status).toBe(200);
  });

  it('a submission names a version or values, not both', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const draft = await postVersion(app.id, {
      manifest: { ...(await versionsOf(app.id)).body.data[0].manifest, name: 'Planner' },
    });
    const both = await call(w, 'POST', `/v1/developer/apps/${app.id}/submissions`, {
      token: developer.token,
      headers: { 'idempotency-key': `both-${app.id}` },
      body: { listing: listing(app.scopes), version_id: draft.body.id, app: { name: 'X' } },
    });
    expect(both.status).toBe(422);
    expect(both.body.errors[0].path).toBe('/version_id');
  });
});
