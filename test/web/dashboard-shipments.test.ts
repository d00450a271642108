import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient, shipmentIds, signUpInBrowser } from './page-client.ts';

const SHIPMENT = {
  recipient_name: 'Grace Hopper',
  recipient_email: 'grace@example.test',
  recipient_phone: '+1 555 0100',
  external_ref: 'order-42',
  payment_mode: 'cod',
  cod_amount: '12.5',
  currency: 'eur',
  weight_grams: '1200',
  status: 'confirmed',
};

describe('dashboard shipments', () => {
  let w: TestWaybill;
  let client: PageClient;
  beforeAll(async () => {
    w = await startWaybill();
    ({ client } = await signUpInBrowser(w, 'Shipper'));
    await client.get('/dashboard/companies/new');
    await client.post('/dashboard/companies', { name: 'Shipper Co' });
  });
  afterAll(async () => {
    await w?.close();
  });

  async function createThroughForm(fields: Record<string, string>) {
    await client.get('/dashboard/shipments/new');
    const created = await client.post('/dashboard/shipments', fields);
    expect(created.status, created.text.slice(0, 800)).toBe(303);
    const id = /\/dashboard\/shipments\/(shp_\w+)$/.exec(created.location ?? '')?.[1] ?? '';
    return { id, page: await client.follow(created) };
  }

  it('creates a shipment from the form, with money in minor units, and shows all of it', async () => {
    const { id, page } = await createThroughForm(SHIPMENT);
    expect(page.text).toMatch(/Shipment WB\w+ created\./);
    for (const shown of [
      'Grace Hopper',
      'grace@example.test',
      '+1 555 0100',
      'order-42',
      '€12.50 on delivery',
      '1.2 kg',
    ]) {
      expect(page.text).toContain(shown);
    }
    // The stored shipment is what the API would answer: 12.5 EUR is 1250 minor units.
    const row = await w.ctx.db
      .selectFrom('shipments')
      .selectAll()
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect([
      row.cod_amount_minor === null ? null : Number(row.cod_amount_minor),
      row.currency,
      row.livemode,
    ]).toEqual([1250, 'EUR', false]);
    expect(page.text).toContain('shipment.created');
    // The one-time message is gone on the next visit.
    expect((await client.get(`/dashboard/shipments/${id}`)).text).not.toContain('created.');
  });

  it('converts amounts by the currency’s own digits and refuses too many decimals', async () => {
    const yen = await createThroughForm({
      ...SHIPMENT,
      recipient_name: 'Yen buyer',
      currency: 'JPY',
      cod_amount: '1500',
    });
    expect(yen.page.text).toContain('¥1,500 on delivery');
    await client.get('/dashboard/shipments/new');
    const refused = await client.post('/dashboard/shipments', {
      ...SHIPMENT,
      recipient_name: 'Fractional Yen',
      currency: 'JPY',
      cod_amount: '15.5',
    });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('The amount must be a whole number for JPY');
    // The form comes back as the person left it.
    expect(refused.text).toContain('value="Fractional Yen"');
    const unknown = await client.post('/dashboard/shipments', {
      ...SHIPMENT,
      recipient_name: 'Nowhere',
      currency: 'XYZ',
    });
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('XYZ is not an ISO 4217 currency code');
    const list = await client.get('/dashboard/shipments');
    expect(list.text).not.toContain('Fractional Yen');
    expect(list.text).not.toContain('Nowhere');
  });

  it('escapes what people type', async () => {
    const evil = '<script>alert(1)</script>';
    const { id, page } = await createThroughForm({
      ...SHIPMENT,
      recipient_name: evil,
      external_ref: '"><img src=x>',
    });
    for (const text of [
      page.text,
      (await client.get('/dashboard/shipments')).text,
      (await client.get('/dashboard/events')).text,
    ]) {
      expect(text).not.toContain('<script>alert(1)');
      expect(text).not.toContain('<img src=x>');
    }
    expect(page.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(shipmentIds((await client.get('/dashboard/shipments')).text)).toContain(id);
  });

  it('moves a shipment only to the allowed next statuses, through to delivered', async () => {
    const { id, page } = await createThroughForm({
      ...SHIPMENT,
      status: 'draft',
      payment_mode: 'prepaid',
      cod_amount: '',
    });
    // The move form's choices (the page's checkpoint form offers every status, kept unapplied when behind).
    const moveForm = page.text.match(/<form[^>]*action="[^"]*\/status"[\s\S]*?<\/form>/)?.[0] ?? '';
    expect(moveForm).toMatch(/<option value="confirmed">confirmed<\/option><option value="cancelled">/);
    expect(moveForm).not.toContain('<option value="delivered">');
    const skip = await client.post(`/dashboard/shipments/${id}/status`, { status: 'delivered' });
    expect(skip.status).toBe(409);
    expect(skip.text).toContain('A shipment cannot move from draft to delivered');
    for (const status of ['confirmed', 'picked_up', 'in_transit', 'out_for_delivery', 'delivered']) {
      const moved = await client.post(`/dashboard/shipments/${id}/status`, {
        status,
        exception_reason: 'lost',
      });
      const landed = await client.follow(moved);
      expect(landed.text).toContain(`Moved to ${status.replaceAll('_', ' ')}.`);
    }
    const final = await client.get(`/dashboard/shipments/${id}`);
    expect(final.text).toContain('delivered is final');
    expect(final.text).toContain('shipment.delivered');
    expect(final.text.match(/class="event-type">shipment\.status_changed</g)).toHaveLength(5);
    // The page's events are the API's events of that shipment.
    const api = await w.ctx.db.selectFrom('events').select('type').where('shipment_id', '=', id).execute();
    expect(api).toHaveLength(7);
  });

  it('asks a reason for an exception', async () => {
    const { id } = await createThroughForm(SHIPMENT);
    await client.post(`/dashboard/shipments/${id}/status`, { status: 'picked_up' });
    const page = await client.get(`/dashboard/shipments/${id}`);
    expect(page.text).toContain('name="exception_reason"');
    const moved = await client.follow(
      await client.post(`/dashboard/shipments/${id}/status`, {
        status: 'exception',
        exception_reason: 'damaged',
      }),
    );
    expect(moved.text).toContain('shipment.exception');
    expect(moved.text).toMatch(/Exception reason<\/dt><dd>damaged/);
  });

  it('lists newest first with a status filter and a Next link', async () => {
    for (let i = 0; i < 21; i += 1) {
      w.clock.advance(1000);
      await createThroughForm({ ...SHIPMENT, recipient_name: `Bulk ${i}`, status: 'draft' });
    }
    const first = await client.get('/dashboard/shipments?status=draft');
    expect(first.text).toMatch(/Bulk 20[\s\S]*Bulk 19/);
    expect(first.text).not.toContain('Grace Hopper');
    const next = /href="(\/dashboard\/shipments\?status=draft&amp;cursor=[^"]+)"/.exec(first.text)?.[1];
    expect(next).toBeDefined();
    const second = await client.get((next ?? '').replaceAll('&amp;', '&'));
    expect(shipmentIds(second.text).length).toBeGreaterThan(0);
    expect(shipmentIds(second.text).filter((id) => shipmentIds(first.text).includes(id))).toEqual([]);
  });

  it('shows an unknown shipment as a friendly 404 page', async () => {
    const page = await client.get('/dashboard/shipments/shp_doesnotexist');
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect(page.text).toContain('Not found');
    const move = await client.post('/dashboard/shipments/shp_doesnotexist/status', { status: 'confirmed' });
    expect(move.status).toBe(404);
    expect(move.text).not.toMatch(/at \w+ \(/);
    // The API still answers problem JSON: the pages' error handler stays in the pages.
    expect((await call(w, 'GET', '/v1/shipments/shp_x')).headers['content-type']).toContain('problem+json');
  });
});

describe('the shipments list finds by carrier and by the carrier’s tracking number', () => {
  let w: TestWaybill;
  let client: PageClient;
  let testToken: string;
  beforeAll(async () => {
    w = await startWaybill();
    const company = await createCompany(w, 'Carrier Mix');
    // A new company's dashboard opens on its test data.
    testToken = company.testToken;
    client = new PageClient(w);
    client.cookies.set('waybill_session', company.owner.token);
  });
  afterAll(async () => {
    await w?.close();
  });

  it('offers the carriers its shipments name, filters by one, keeps it on the Next link, and ignores a foreign code', async () => {
    const dhl = await createShipment(w, testToken, {
      recipient_name: 'Dora DHL',
      carrier: { code: 'dhl', name: 'DHL' },
      carrier_tracking_number: 'JD014600006281230704',
    });
    await createShipment(w, testToken, { recipient_name: 'Una UPS', carrier: { code: 'ups', name: 'UPS' } });
    await createShipment(w, testToken, { recipient_name: 'Nora None' });

    const all = await client.get('/dashboard/shipments');
    expect(all.text).toContain('<option value="dhl">DHL</option>');
    expect(all.text).toContain('<option value="ups">UPS</option>');
    expect(shipmentIds(all.text)).toHaveLength(3);

    const onlyDhl = await client.get('/dashboard/shipments?carrier=dhl');
    expect(shipmentIds(onlyDhl.text)).toEqual([dhl.id]);
    expect(onlyDhl.text).toContain('<option value="dhl" selected>DHL</option>');

    const byCarrierNumber = await client.get('/dashboard/shipments?q=JD014600006281230704');
    expect(shipmentIds(byCarrierNumber.text)).toEqual([dhl.id]);

    const unknown = await client.get('/dashboard/shipments?carrier=%3Cscript%3E');
    expect(unknown.status).toBe(200);
    expect(shipmentIds(unknown.text)).toHaveLength(3);
  });
});
