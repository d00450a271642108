import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

const RECIPIENT = {
  recipient_name: 'Grace Hopper',
  recipient_email: 'grace.hopper@example.test',
  recipient_phone: '+34 600 111 222',
  external_ref: 'ORDER-77-SECRET',
};

/** Every personal value of RECIPIENT, as a whole and in parts: none may show on the page. */
const PERSONAL = [
  RECIPIENT.recipient_name,
  'Grace',
  'Hopper',
  RECIPIENT.recipient_email,
  'example.test',
  RECIPIENT.recipient_phone,
  '600 111 222',
  RECIPIENT.external_ref,
];

function pathOf(url: string): string {
  return new URL(url).pathname;
}

async function page(w: TestWaybill, path: string, language?: string) {
  return w.app.inject({
    method: 'GET',
    url: path,
    headers: language ? { 'accept-language': language } : {},
  });
}

async function move(w: TestWaybill, token: string, id: string, ...statuses: string[]): Promise<Json> {
  let last: Json = null;
  for (const status of statuses) {
    const moved = await call(w, 'POST', `/v1/shipments/${id}/status`, { token, body: { status } });
    expect(moved.status, moved.text).toBe(200);
    last = moved.body;
  }
  return last;
}

describe('the public tracking page', () => {
  let w: TestWaybill;
  let company: CompanyFixture;
  beforeAll(async () => {
    w = await startWaybill();
    company = await createCompany(w, 'Parcel Fox Ltd');
  });
  afterAll(async () => {
    await w?.close();
  });

  it('gives every shipment a tracking_url with a random token of its own', async () => {
    const a = await createShipment(w, company.liveToken, RECIPIENT);
    const b = await createShipment(w, company.liveToken, RECIPIENT);
    const pattern = new RegExp(`^${w.ctx.config.webUrl}/t/[A-Za-z0-9]{24}$`);
    expect(a.tracking_url).toMatch(pattern);
    expect(b.tracking_url).toMatch(pattern);
    expect(a.tracking_url).not.toBe(b.tracking_url);
    // Nothing of the shipment is in it.
    for (const part of [a.id, a.tracking_number, company.tenantId])
      expect(a.tracking_url).not.toContain(part);
    const got = await call(w, 'GET', `/v1/shipments/${a.id}`, { token: company.liveToken });
    expect(got.body.tracking_url).toBe(a.tracking_url);
    const listed = await call(w, 'GET', '/v1/shipments', { token: company.liveToken });
    expect(listed.body.data.find((s: Json) => s.id === a.id).tracking_url).toBe(a.tracking_url);
    const moved = await move(w, company.liveToken, a.id, 'picked_up');
    expect(moved.tracking_url).toBe(a.tracking_url);
  });

  it('shows the status in words and the timeline, with the page headers, and nothing personal or any id', async () => {
    const shipment = await createShipment(w, company.liveToken, RECIPIENT);
    await move(w, company.liveToken, shipment.id, 'picked_up', 'in_transit', 'out_for_delivery', 'delivered');
    const answer = await page(w, pathOf(shipment.tracking_url));
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/html/);
    expect(answer.headers['x-robots-tag']).toMatch(/noindex/);
    expect(answer.headers['referrer-policy']).toBe('no-referrer');
    expect(String(answer.headers['content-security-policy'])).toContain("frame-ancestors 'none'");
    expect(answer.body).toContain('<meta name="robots" content="noindex, nofollow">');
    expect(answer.body).toContain('<html lang="en">');
    expect(answer.body).toContain('Parcel Fox Ltd');
    expect(answer.body).toContain('<strong>Delivered</strong>');
    for (const words of ['Picked up', 'On its way', 'Out for delivery', 'Ready to ship'])
      expect(answer.body).toContain(words);
    const events = await call(w, 'GET', `/v1/events?shipment_id=${shipment.id}&limit=100`, {
      token: company.liveToken,
    });
    const ids = [
      shipment.id,
      company.tenantId,
      company.owner.id,
      shipment.tracking_number,
      ...events.body.data.map((event: Json) => event.id),
    ];
    for (const value of [...ids, ...PERSONAL]) expect(answer.body).not.toContain(value);
    for (const prefix of ['shp_', 'evt_', 'acct_', 'usr_', 'tok_']) expect(answer.body).not.toContain(prefix);
  });

  it('shows the checkpoints (city and country), the sub-status in words, the estimate and who signed, in both languages, and nothing personal or any id', async () => {
    const shipment = await createShipment(w, company.liveToken, {
      ...RECIPIENT,
      destination: {
        line1: 'Calle del Secreto 13',
        city: 'Valencia',
        postal_code: '46001',
        country: 'ES',
      },
      estimated_delivery: {
        earliest: '2026-11-23T08:00:00Z',
        latest: '2026-11-23T18:00:00Z',
        source: 'carrier',
      },
    });
    const add = async (body: Json) => {
      const added = await call(w, 'POST', `/v1/shipments/${shipment.id}/checkpoints`, {
        token: company.liveToken,
        body,
      });
      expect(added.status, added.text).toBe(201);
      return added.body.checkpoint as Json;
    };
    const first = await add({
      occurred_at: '2026-11-21T14:05:00Z',
      location: { city: 'Zaragoza', postal_code: '50197', country: 'ES', lat: 41.6561, lng: -0.8773 },
      message: 'Left the Zaragoza hub',
      status: 'in_transit',
      sub_status: 'in_transit.departed_facility',
      external_id: 'EXT-SECRET-1',
    });
    const second = await add({
      occurred_at: '2026-11-22T09:30:00Z',
      location: { city: 'Lisboa', country: 'PT' },
      message: 'At the customs office',
      sub_status: 'in_transit.customs',
      estimated_delivery: {
        earliest: '2026-11-24T08:00:00Z',
        latest: '2026-11-24T18:00:00Z',
        source: 'carrier',
      },
    });
    const path = pathOf(shipment.tracking_url);
    const inTransit = await page(w, path);
    expect(inTransit.statusCode).toBe(200);
    expect(inTransit.body).toContain('<strong>On its way</strong>');
    expect(inTransit.body).toContain('The parcel is in customs clearance');
    expect(inTransit.body).toContain('Expected: 24 Nov 2026, 08:00 UTC – 24 Nov 2026, 18:00 UTC');
    // Newest first, each with its city and country; the creation, which no checkpoint tells, too.
    const items = [...inTransit.body.matchAll(/<li>([\s\S]*?)<\/li>/g)].map((m) =>
      (m[1] ?? '')
        .replace(/<[^>]+>/g, ' ')
        .replace(/\s+/g, ' ')
        .trim(),
    );
    expect(items).toEqual([
      '22 Nov 2026, 09:30 UTC Lisboa, Portugal At the customs office',
      '21 Nov 2026, 14:05 UTC Zaragoza, Spain Left the Zaragoza hub',
      expect.stringMatching(/^21 Nov 2026, 12:00 UTC Ready to ship$/),
    ]);
    // The moves the checkpoint made (picked up, on its way) are told by the checkpoint, not twice.
    expect(inTransit.body).not.toContain('Picked up');

    await add({
      occurred_at: '2026-11-24T11:15:00Z',
      location: { city: 'Madrid', country: 'ES', postal_code: '28013' },
      message: 'Delivered to a neighbour',
      status: 'delivered',
      sub_status: 'delivered.neighbour',
      proof_of_delivery: { method: 'signature', signed_by: 'M. Ortega', received_at: '2026-11-24T11:15:00Z' },
    });
    const delivered = await page(w, path);
    expect(delivered.body).toContain('<strong>Delivered</strong>');
    expect(delivered.body).toContain('Left with a neighbour');
    expect(delivered.body).toContain('Received by: M. Ortega');
    expect(delivered.body).toContain('Madrid, Spain');
    const spanish = await page(w, path, 'es-ES,es;q=0.9');
    expect(spanish.body).toContain('<strong>Entregado</strong>');
    expect(spanish.body).toContain('Dejado con un vecino');
    expect(spanish.body).toContain('Recibido por: M. Ortega');
    expect(spanish.body).toContain('Llegada prevista: 24 nov 2026');
    expect(spanish.body).toContain('Lisboa, Portugal');
    expect(spanish.body).toContain('Zaragoza, España');

    const events = await call(w, 'GET', `/v1/events?shipment_id=${shipment.id}&limit=100`, {
      token: company.liveToken,
    });
    const forbidden = [
      ...PERSONAL,
      'Calle del Secreto',
      'Valencia',
      '46001',
      '50197',
      '28013',
      '41.65',
      '-0.87',
      'EXT-SECRET-1',
      shipment.id,
      shipment.tracking_number,
      company.tenantId,
      first.id,
      second.id,
      ...events.body.data.map((event: Json) => event.id),
    ];
    for (const body of [delivered.body, spanish.body])
      for (const value of forbidden) expect(body, value).not.toContain(value);
    for (const prefix of ['shp_', 'evt_', 'chk_', 'acct_', 'usr_'])
      expect(delivered.body).not.toContain(prefix);
  });

  it('speaks Spanish to a browser that asks for it', async () => {
    const shipment = await createShipment(w, company.liveToken, RECIPIENT);
    await move(w, company.liveToken, shipment.id, 'picked_up', 'in_transit');
    const spanish = await page(w, pathOf(shipment.tracking_url), 'es-MX,es;q=0.9,en;q=0.5');
    expect(spanish.body).toContain('<html lang="es">');
    expect(spanish.body).toContain('<strong>En camino</strong>');
    expect(spanish.body).toContain('Historial');
    expect(spanish.headers.vary).toMatch(/accept-language/i);
    const english = await page(w, pathOf(shipment.tracking_url), 'fr-FR,en;q=0.8,es;q=0.5');
    expect(english.body).toContain('<strong>On its way</strong>');
  });

  it('answers a made-up token with a plain 404 page that says nothing more', async () => {
    for (const token of [
      'A'.repeat(24),
      'abc',
      'zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz',
      'abc-def-ghi-jkl-mno-pqr',
    ]) {
      const answer = await page(w, `/t/${token}`);
      expect(answer.statusCode).toBe(404);
      expect(answer.headers['content-type']).toMatch(/^text\/html/);
      expect(answer.headers['x-robots-tag']).toMatch(/noindex/);
      expect(answer.body).toContain('Not found');
      expect(answer.body).not.toContain('Parcel Fox');
    }
  });

  it('rotates the link: the old one finds nothing, the new one opens the page', async () => {
    const shipment = await createShipment(w, company.liveToken, RECIPIENT);
    const rotated = await call(w, 'POST', `/v1/shipments/${shipment.id}/tracking-url/rotate`, {
      token: company.liveToken,
    });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.id).toBe(shipment.id);
    expect(rotated.body.tracking_url).not.toBe(shipment.tracking_url);
    expect((await page(w, pathOf(shipment.tracking_url))).statusCode).toBe(404);
    expect((await page(w, pathOf(rotated.body.tracking_url))).statusCode).toBe(200);
    const again = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(again.body.tracking_url).toBe(rotated.body.tracking_url);
  });

  it('refuses rotation without the write scope, across modes, and for another company', async () => {
    const shipment = await createShipment(w, company.liveToken, RECIPIENT);
    const path = `/v1/shipments/${shipment.id}/tracking-url/rotate`;
    expect((await call(w, 'POST', path)).status).toBe(401);
    expect((await call(w, 'POST', path, { token: company.testToken })).status).toBe(404);
    const other = await createCompany(w, 'Other Co');
    expect((await call(w, 'POST', path, { token: other.liveToken })).status).toBe(404);
    const readOnly = await call(w, 'POST', `/v1/companies/${company.tenantId}/api-tokens`, {
      token: company.owner.token,
      body: { name: 'reader', mode: 'live', scopes: ['shipments:read'] },
    });
    const refused = await call(w, 'POST', path, { token: readOnly.body.token });
    expect(refused.status).toBe(403);
    expect((await page(w, pathOf(shipment.tracking_url))).statusCode).toBe(200);
  });

  it('gives the shipments of an erased recipient new links', async () => {
    const shipment = await createShipment(w, company.liveToken, {
      ...RECIPIENT,
      recipient_email: 'erase.me@example.test',
    });
    const erased = await call(w, 'POST', `/v1/companies/${company.tenantId}/privacy-requests`, {
      token: company.owner.token,
      body: { kind: 'redact', recipient: { email: 'erase.me@example.test' } },
    });
    expect(erased.status, erased.text).toBe(201);
    expect((await page(w, pathOf(shipment.tracking_url))).statusCode).toBe(404);
    const after = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: company.liveToken });
    expect(after.body.tracking_url).not.toBe(shipment.tracking_url);
    expect((await page(w, pathOf(after.body.tracking_url))).statusCode).toBe(200);
  });
});

describe('the tracking page rate limit', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_TRACKING_PAGE_RATE_LIMIT: '5' } });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('refuses an address past its requests of the minute, made-up tokens included, and lets it in again later', async () => {
    const company = await createCompany(w);
    const shipment = await createShipment(w, company.liveToken, RECIPIENT);
    const path = pathOf(shipment.tracking_url);
    for (let i = 0; i < 4; i++) expect((await page(w, path)).statusCode).toBe(200);
    expect((await page(w, '/t/madeupmadeupmadeupmadeup')).statusCode).toBe(404);
    const refused = await page(w, path);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBeDefined();
    expect(refused.headers['content-type']).toMatch(/^text\/html/);
    expect(refused.body).not.toContain('Test Company');
    // Another address is counted on its own.
    const elsewhere = await w.app.inject({ method: 'GET', url: path, remoteAddress: '127.0.0.9' });
    expect(elsewhere.statusCode).toBe(200);
  });
});
