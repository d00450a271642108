import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  capturedLogger,
  consumeQueue,
  type RabbitPlace,
  rabbitMqMissing,
  rabbitPlace,
  verifyConsumed,
} from '../delivery/brokers.ts';
import { testWorker } from '../delivery/support.ts';
import { expectProblem } from '../http/expect.ts';
import {
  listing,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signUpAs,
  startEventsReceiver,
  submitAndDecide,
} from '../store/support.ts';
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
import { install, registerApp } from './fixtures.ts';

/**
 * App subscriptions delivering to a message broker (CONTRACT.md "Destinations": "an endpoint (and
 * an app subscription) may deliver to a message broker"), against the real RabbitMQ on 127.0.0.1.
 */
const rabbitMissing = await rabbitMqMissing();
if (rabbitMissing) console.warn(`subscription destinations: RabbitMQ tests skipped: ${rabbitMissing}`);

const TYPES = ['shipment.created', 'shipment.status_changed'];

/** Every log line the Waybill writes, at every level. */
const { logger, lines: logLines } = capturedLogger();

describe.skipIf(rabbitMissing !== null)('an app subscription delivering to RabbitMQ', () => {
  let w: TestWaybill;
  let developer: Person;
  let reviewer: Person;
  let company: CompanyFixture;
  let place: RabbitPlace;
  let eventsReceiver: Awaited<ReturnType<typeof startEventsReceiver>>;

  beforeAll(async () => {
    w = await startWaybill({ ...reviewerEnv, logger });
    developer = await signUpPerson(w, 'Broker Developer');
    reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
    company = await createCompany(w);
    place = await rabbitPlace();
    eventsReceiver = await startEventsReceiver(() => 200);
  });
  afterAll(async () => {
    await eventsReceiver?.close();
    await w?.close();
    await place?.dispose();
  });

  const versionsOf = (appId: string) =>
    call(w, 'GET', `/v1/developer/apps/${appId}/versions`, { token: developer.token });
  const postVersion = (appId: string, manifest: Json) =>
    call(w, 'POST', `/v1/developer/apps/${appId}/versions`, { token: developer.token, body: { manifest } });
  const release = (appId: string, versionId: string) =>
    call(w, 'POST', `/v1/developer/apps/${appId}/versions/${versionId}/release`, { token: developer.token });
  const activeManifest = async (appId: string): Promise<Json> =>
    (await versionsOf(appId)).body.data.find((v: Json) => v.status === 'active').manifest;
  const rabbit = (routingKey: string, url = place.url) => ({
    type: 'rabbitmq',
    url,
    exchange: 'app-events',
    routing_key: routingKey,
  });
  const masked = () => `amqp://${place.user}:****@127.0.0.1:5672/${place.vhost}`;

  async function deliverAll(): Promise<void> {
    const worker = testWorker(w);
    try {
      while ((await worker.tick()) > 0) {}
    } finally {
      await worker.stop();
    }
  }

  it("an installed app gets a shipment's events on its queue, verified with standardwebhooks; the password is never shown and is kept when sent back masked", async () => {
    const app = await registerApp(w, developer, { scopes: ['shipments:read'] });
    const base = await activeManifest(app.id);
    const created = await postVersion(app.id, {
      ...base,
      subscriptions: [{ event_types: TYPES, destination: rabbit('{event_type}') }],
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.manifest.subscriptions).toEqual([
      {
        event_types: TYPES,
        url: masked(),
        destination: { ...rabbit('{event_type}'), url: masked() },
        filter: null,
        test_events: false,
        // A new subscription is pinned to the latest event version (decision 0081).
        api_version: '2026-12-01',
      },
    ]);
    expect((await release(app.id, created.body.id)).status).toBe(200);
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
      scopes: ['shipments:read'],
    });

    const consumer = await consumeQueue(place, 'app-events', 'shipment.#');
    const shipment = await createShipment(w, company.liveToken);
    const moved = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: company.liveToken,
      body: { status: 'picked_up' },
    });
    expect(moved.status, moved.text).toBe(200);
    await deliverAll();
    await expect.poll(() => consumer.received.length).toBe(2);
    const verified = consumer.received.map(
      (message) => verifyConsumed(app.events_secret, message, w.clock.now()) as Json,
    );
    expect(verified.map((m) => [m.type, m.installation_id, m.data.shipment.id])).toEqual([
      ['shipment.created', installation.id, shipment.id],
      ['shipment.status_changed', installation.id, shipment.id],
    ]);
    expect(consumer.received.map((m) => m.headers['webhook-event'])).toEqual(TYPES);
    await consumer.close();

    // The manifest as shown, sent back with another routing key: the password stays.
    const shown = await activeManifest(app.id);
    const again = await postVersion(app.id, {
      ...shown,
      subscriptions: [
        {
          ...shown.subscriptions[0],
          destination: { ...shown.subscriptions[0].destination, routing_key: 'again' },
        },
      ],
    });
    expect(again.status, again.text).toBe(201);
    expect((await release(app.id, again.body.id)).status).toBe(200);
    const second = await consumeQueue(place, 'app-events', 'again');
    await createShipment(w, company.liveToken);
    await deliverAll();
    await expect.poll(() => second.received.length).toBe(1);
    expect(verifyConsumed(app.events_secret, second.received[0] as never, w.clock.now())).toMatchObject({
      type: 'shipment.created',
    });
    await second.close();

    // A masked password does not go to another host; a destination is checked as an endpoint's.
    const elsewhere = await postVersion(app.id, {
      ...shown,
      subscriptions: [
        { event_types: TYPES, destination: rabbit('x', masked().replace('127.0.0.1', '127.0.0.2')) },
      ],
    });
    expectProblem(elsewhere, 422, 'validation.failed');
    expect(elsewhere.body.errors.map((e: Json) => e.path)).toEqual([
      '/manifest/subscriptions/0/destination/url',
    ]);
    const noExchange = await postVersion(app.id, {
      ...shown,
      subscriptions: [{ event_types: TYPES, destination: { type: 'rabbitmq', url: place.url } }],
    });
    expectProblem(noExchange, 422, 'validation.failed');
    expect(noExchange.body.errors.map((e: Json) => e.path)).toEqual([
      '/manifest/subscriptions/0/destination/exchange',
    ]);

    const page = await w.app.inject({
      method: 'GET',
      url: `/developer/apps/${app.id}/versions`,
      headers: { cookie: `waybill_session=${developer.token}` },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`${place.user}:****@127.0.0.1`);
    const answers = [created.text, again.text, (await versionsOf(app.id)).text, page.body, noExchange.text];
    for (const text of [...answers, ...logLines]) expect(text).not.toContain(place.password);
  });

  it("a published app's broker destination is reviewed whole: kind, host, credentials, exchange and routing key (Trust 3)", async () => {
    const app = await registerPublishable(w, developer, eventsReceiver.url);
    await submitAndDecide(w, developer, reviewer, app.id, { listing: listing(app.scopes) }, 'approved');
    const base = await activeManifest(app.id);
    const subscribing = await postVersion(app.id, {
      ...base,
      subscriptions: [{ event_types: ['shipment.delivered'], destination: rabbit('all') }],
    });
    expect(subscribing.status, subscribing.text).toBe(201);
    expect((await release(app.id, subscribing.body.id)).body.fields).toEqual(['subscriptions/0']);
    const decided = await submitAndDecide(
      w,
      developer,
      reviewer,
      app.id,
      { listing: listing(app.scopes), version_id: subscribing.body.id },
      'approved',
    );
    expect(decided).toMatchObject({ status: 'approved', version_id: subscribing.body.id });
    const reviewed = subscribing.body.manifest;
    const [subscription] = reviewed.subscriptions;

    const cases: Array<Record<string, unknown>> = [
      rabbit('all', place.url.replace('127.0.0.1', '127.0.0.2')),
      { type: 'nats', url: 'nats://127.0.0.1:4222', subject: 'waybill.app.events' },
      { type: 'https', url: eventsReceiver.url },
    ];
    for (const destination of cases) {
      const draft = await postVersion(app.id, {
        ...reviewed,
        subscriptions: [{ event_types: subscription.event_types, destination }],
      });
      expect(draft.status, draft.text).toBe(201);
      const refused = await release(app.id, draft.body.id);
      expect(refused.status, JSON.stringify(destination)).toBe(409);
      expect(refused.body.code).toBe('app.published_requires_review');
      expect(refused.body.fields).toEqual(['subscriptions/0/destination']);
    }
    // A new password, exchange or routing key on the same broker: each goes through review too.
    const sameBroker: Array<Record<string, unknown>> = [
      { ...rabbit('all'), url: place.url.replace(place.password, 'new-pw') },
      { ...rabbit('all'), exchange: 'elsewhere' },
      rabbit('other'),
    ];
    let rotated: Json = null;
    for (const destination of sameBroker) {
      rotated = await postVersion(app.id, {
        ...reviewed,
        subscriptions: [{ event_types: subscription.event_types, destination }],
      });
      expect(rotated.status, rotated.text).toBe(201);
      const refused = await release(app.id, rotated.body.id);
      expect(refused.status, JSON.stringify(destination)).toBe(409);
      expect(refused.body.fields).toEqual(['subscriptions/0/destination']);
    }
    // The same destination sent back masked (the password kept): released at once.
    const unchanged = await postVersion(app.id, reviewed);
    expect(unchanged.status, unchanged.text).toBe(201);
    expect((await release(app.id, unchanged.body.id)).status).toBe(200);
    expect(rotated.text).not.toContain('new-pw');
  });
});
