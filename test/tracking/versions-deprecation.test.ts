import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOUR } from '../../src/lib/clock.ts';
import { reportStalls } from '../../src/modules/tracking/stalls.ts';
import { drainAll, type Receiver, startReceiver, verify } from '../delivery/support.ts';
import { call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * Decision 0081, issue 51 item 4: the document per version, the company's stall threshold, and
 * the deprecation of 2026-11-01 as decision 0025 announces it.
 */

let w: TestWaybill;
let receiver: Receiver;

beforeAll(async () => {
  w = await startWaybill();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

/** Every `$ref` of the document names a component it has. */
function danglingRefs(document: Json): string[] {
  const names = new Set(Object.keys(document.components.schemas));
  const refs = [...JSON.stringify(document).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]);
  return [...new Set(refs)].filter((name) => !names.has(name as string)) as string[];
}

describe('/openapi.json per api_version', () => {
  it("answers the latest version's webhooks by default and 2026-11-01's when asked; an unknown one is 400", async () => {
    const latest = await call(w, 'GET', '/openapi.json');
    expect(latest.status).toBe(200);
    const asked = await call(w, 'GET', '/openapi.json?api_version=2026-12-01');
    expect(asked.body).toEqual(latest.body);
    const first = await call(w, 'GET', '/openapi.json?api_version=2026-11-01');
    expect(first.status).toBe(200);

    expect(Object.keys(latest.body.webhooks)).toContain('shipment.checkpoint_added');
    expect(Object.keys(first.body.webhooks)).not.toContain('shipment.checkpoint_added');
    expect(Object.keys(first.body.webhooks)).toContain('shipment.status_changed');
    const moved = (document: Json) => document.components.schemas.ShipmentStatusChangedEvent;
    expect(moved(latest.body).properties.api_version.const).toBe('2026-12-01');
    expect(moved(first.body).properties.api_version.const).toBe('2026-11-01');
    expect(moved(first.body).properties.data.$ref).toBe('#/components/schemas/ShipmentEventData');
    expect(
      first.body.webhooks['shipment.status_changed'].post.requestBody.content['application/json'].example
        .api_version,
    ).toBe('2026-11-01');
    // The routes are the same in both: REST answers the latest shape.
    expect(first.body.paths).toEqual(latest.body.paths);
    expect(danglingRefs(first.body)).toEqual([]);
    expect(danglingRefs(latest.body)).toEqual([]);
    // Each version's message schemas are the catalogue's of that version.
    const company = await createCompany(w);
    const catalogue = await call(w, 'GET', '/v1/webhook-event-types?api_version=2026-11-01', {
      token: company.liveToken,
    });
    expect(Object.keys(first.body.webhooks).sort()).toEqual(
      catalogue.body.data.map((t: Json) => t.type).sort(),
    );

    const unknown = await call(w, 'GET', '/openapi.json?api_version=2025-01-01');
    expect(unknown.status).toBe(400);
    expect(unknown.headers['content-type']).toContain('application/problem+json');
    expect(unknown.body.code).toBe('validation.failed');
  });
});

describe("the company's stall_after_hours", () => {
  it('is set with PATCH (1 to 720 whole hours, 422 otherwise, nothing changed), shown on GET, and read by the stall job', async () => {
    const company = await createCompany(w);
    const path = `/v1/companies/${company.tenantId}`;
    const shown = await call(w, 'GET', path, { token: company.owner.token });
    expect(shown.body.stall_after_hours).toBe(72);
    for (const bad of [0, 721, 1.5, -3]) {
      const refused = await call(w, 'PATCH', path, {
        token: company.owner.token,
        body: { stall_after_hours: bad, agent_access: { live: true } },
      });
      expect(refused.status, String(bad)).toBe(422);
      expect(refused.body).toMatchObject({
        code: 'validation.failed',
        errors: [{ path: '/stall_after_hours' }],
      });
    }
    const wrongType = await call(w, 'PATCH', path, {
      token: company.owner.token,
      body: { stall_after_hours: 'soon' },
    });
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.code).toBe('validation.failed');
    // Nothing of a refused request was written.
    const unchanged = await call(w, 'GET', path, { token: company.owner.token });
    expect(unchanged.body).toMatchObject({ stall_after_hours: 72, agent_access: { live: false } });

    const set = await call(w, 'PATCH', path, { token: company.owner.token, body: { stall_after_hours: 2 } });
    expect(set.status, set.text).toBe(200);
    expect(set.body.stall_after_hours).toBe(2);
    expect((await call(w, 'GET', path, { token: company.owner.token })).body.stall_after_hours).toBe(2);

    const endpoint = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.stalled'] },
    });
    expect(endpoint.status).toBe(201);
    const shipment = await createShipment(w, company.liveToken);
    const before = receiver.received.length;
    w.clock.advance(HOUR);
    await reportStalls(w.ctx);
    await drainAll(w);
    expect(receiver.received.length).toBe(before);
    w.clock.advance(HOUR + 60_000);
    await reportStalls(w.ctx);
    await drainAll(w);
    const stalls = receiver.received
      .slice(before)
      .map((m) => verify(m, endpoint.body.secret, w.clock.now()) as Json);
    expect(stalls.map((m) => [m.type, m.api_version, m.data.shipment.id])).toEqual([
      ['shipment.stalled', '2026-12-01', shipment.id],
    ]);
  });
});

describe('2026-11-01 is deprecated (decision 0025)', () => {
  it('a REST request naming it answers Deprecation and Sunset; the owner lists the endpoints still on it', async () => {
    const company = await createCompany(w);
    const shipment = await createShipment(w, company.liveToken);
    const old = await call(w, 'GET', `/v1/shipments/${shipment.id}`, {
      token: company.liveToken,
      headers: { 'waybill-version': '2026-11-01' },
    });
    expect(old.status).toBe(200);
    expect(old.body).not.toHaveProperty('carrier');
    // RFC 9745: a Structured Field date (@ and Unix seconds); RFC 8594: an HTTP-date.
    expect(old.headers.deprecation).toBe(`@${Date.parse('2026-12-01T00:00:00Z') / 1000}`);
    expect(old.headers.sunset).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
    expect(old.headers.link).toMatch(/^<.+\/docs\/webhooks#versions>; rel="deprecation"; type="text\/html"$/);
    // An error answers them too; the latest, or no header, answers neither.
    const missing = await call(w, 'GET', '/v1/shipments/shp_nothing', {
      token: company.liveToken,
      headers: { 'waybill-version': '2026-11-01' },
    });
    expect(missing.status).toBe(404);
    expect(missing.headers.sunset).toBe('Tue, 01 Jun 2027 00:00:00 GMT');
    for (const headers of [{ 'waybill-version': '2026-12-01' }, {}] as Record<string, string>[]) {
      const current = await call(w, 'GET', `/v1/shipments/${shipment.id}`, {
        token: company.liveToken,
        headers,
      });
      expect(current.headers).not.toHaveProperty('deprecation');
      expect(current.headers).not.toHaveProperty('sunset');
    }

    const pinnedOld = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'], api_version: '2026-11-01' },
    });
    expect(pinnedOld.body.api_version_sunset_at).toBe('2027-06-01T00:00:00.000Z');
    const pinnedNew = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(pinnedNew.body.api_version_sunset_at).toBeNull();
    const stillOld = await call(w, 'GET', '/v1/webhook-endpoints?api_version=2026-11-01', {
      token: company.liveToken,
    });
    expect(stillOld.status).toBe(200);
    expect(stillOld.body.data.map((e: Json) => e.id)).toEqual([pinnedOld.body.id]);
    const all = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    expect(all.body.data).toHaveLength(2);
    // Moving it to the latest takes it off the list.
    const moved = await call(w, 'PATCH', `/v1/webhook-endpoints/${pinnedOld.body.id}`, {
      token: company.liveToken,
      body: { api_version: '2026-12-01' },
    });
    expect(moved.status).toBe(200);
    expect(moved.body.api_version_sunset_at).toBeNull();
    expect(
      (await call(w, 'GET', '/v1/webhook-endpoints?api_version=2026-11-01', { token: company.liveToken }))
        .body.data,
    ).toEqual([]);
    const bad = await call(w, 'GET', '/v1/webhook-endpoints?api_version=2020-01-01', {
      token: company.liveToken,
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('validation.failed');
  });
});
