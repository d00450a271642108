import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECOND } from '../../src/lib/clock.ts';
import { countRows } from '../http/expect.ts';
import { call, createApiToken, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

/** Every page of a list, following next_cursor to the end. */
async function walk(token: string, query: string, limit: number): Promise<Json[]> {
  const all: Json[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 100; pages++) {
    const page = await call(
      w,
      'GET',
      `/v1/shipments?limit=${limit}${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      { token },
    );
    expect(page.status).toBe(200);
    expect(page.body.data.length).toBeLessThanOrEqual(limit);
    all.push(...page.body.data);
    cursor = page.body.next_cursor;
    if (cursor === null) return all;
  }
  throw new Error('the list never ended');
}

describe('create and read', () => {
  it('creates a confirmed shipment with every field, and reads it back the same', async () => {
    const { liveToken } = await createCompany(w);
    const body = {
      recipient_name: 'Grace Hopper',
      recipient_email: 'grace@example.test',
      recipient_phone: '+1 555 0100',
      external_ref: 'ORDER-42',
      payment_mode: 'cod',
      cod_amount_minor: 4599,
      currency: 'eur',
      parcels: [{ weight_grams: 1200, length_mm: 300, width_mm: 200, height_mm: 100, reference: 'box 1' }],
    };
    const created = await call(w, 'POST', '/v1/shipments', { token: liveToken, body });
    expect(created.status).toBe(201);
    const now = w.clock.now().toISOString();
    expect(created.body).toEqual({
      ...body,
      id: expect.stringMatching(/^shp_/),
      tracking_number: expect.any(String),
      status: 'confirmed',
      currency: 'EUR',
      customer_account_id: null,
      livemode: true,
      exception_reason: null,
      carrier: null,
      carrier_tracking_number: null,
      destination: null,
      sub_status: null,
      estimated_delivery: null,
      proof_of_delivery: null,
      latest_checkpoint: null,
      created_at: now,
      updated_at: now,
      tracking_url: expect.stringMatching(/\/t\/[A-Za-z0-9]{24}$/),
    });
    const read = await call(w, 'GET', `/v1/shipments/${created.body.id}`, { token: liveToken });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(created.body);
  });

  it('creates a draft, and a prepaid shipment has no amount', async () => {
    const { liveToken } = await createCompany(w);
    const draft = await createShipment(w, liveToken, { status: 'draft' });
    expect(draft).toMatchObject({
      status: 'draft',
      payment_mode: 'prepaid',
      cod_amount_minor: null,
      parcels: [],
    });
  });

  it('money is integer minor units with a known ISO 4217 currency', async () => {
    const { tenantId, liveToken } = await createCompany(w);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ currency: 'XXY' }, 'shipment.invalid_currency'],
      [{ currency: 'EURO' }, 'validation.failed'],
      [{ payment_mode: 'cod', cod_amount_minor: -5 }, 'validation.failed'],
      [{ payment_mode: 'cod', cod_amount_minor: 12.5 }, 'validation.failed'],
      [{ payment_mode: 'cod', cod_amount_minor: '100' }, 'validation.failed'],
      [{ payment_mode: 'cod' }, 'shipment.invalid_cod'],
      [{ payment_mode: 'cod', cod_amount_minor: 0 }, 'shipment.invalid_cod'],
      [{ payment_mode: 'prepaid', cod_amount_minor: 100 }, 'shipment.invalid_cod'],
    ];
    for (const [extra, code] of cases) {
      const response = await call(w, 'POST', '/v1/shipments', {
        token: liveToken,
        body: { recipient_name: 'X', currency: 'EUR', ...extra },
      });
      expect(response.status, JSON.stringify(extra)).toBe(400);
      expect(response.body.code, JSON.stringify(extra)).toBe(code);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    expect(await countRows(w, 'shipments', tenantId)).toBe(0);
    const yen = await createShipment(w, liveToken, {
      currency: 'jpy',
      payment_mode: 'cod',
      cod_amount_minor: 1,
    });
    expect(yen).toMatchObject({ currency: 'JPY', cod_amount_minor: 1 });
  });
});

describe('lists', () => {
  it('pages through every shipment, newest first, without duplicates or gaps', async () => {
    const { liveToken } = await createCompany(w);
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      // Several share a creation instant: the id breaks the tie.
      if (i % 4 === 0) w.clock.advance(SECOND);
      ids.push((await createShipment(w, liveToken, { external_ref: `R${i}` })).id);
    }
    for (const limit of [1, 5, 7, 100]) {
      const seen = (await walk(liveToken, '', limit)).map((s) => s.id);
      expect(seen).toHaveLength(23);
      expect(new Set(seen).size).toBe(23);
      expect(new Set(seen)).toEqual(new Set(ids));
    }
    const all = await walk(liveToken, '', 100);
    const times = all.map((s) => s.created_at as string);
    expect(times).toEqual([...times].sort().reverse());
    const page = await call(w, 'GET', '/v1/shipments', { token: liveToken });
    expect(page.body.data).toHaveLength(20);

    for (const bad of ['limit=0', 'limit=101', 'limit=abc', 'cursor=notacursor', 'status=lost', 'sort=asc']) {
      const response = await call(w, 'GET', `/v1/shipments?${bad}`, { token: liveToken });
      expect(response.status, bad).toBe(400);
      expect(response.body.code).toBe('validation.failed');
    }
  });

  it('filters by status and by merchant account', async () => {
    const { owner, tenantId, liveToken } = await createCompany(w);
    const account = await call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, {
      token: owner.token,
      body: { name: 'Shop' },
    });
    const shop = account.body.id;
    const draft = await createShipment(w, liveToken, { status: 'draft' });
    const shopped = await createShipment(w, liveToken, { customer_account_id: shop });
    const plain = await createShipment(w, liveToken);
    const ids = async (query: string) => (await walk(liveToken, query, 10)).map((s) => s.id).sort();
    expect(await ids('&status=draft')).toEqual([draft.id]);
    expect(await ids('&status=confirmed')).toEqual([shopped.id, plain.id].sort());
    expect(await ids(`&customer_account_id=${shop}`)).toEqual([shopped.id]);
    expect(await ids(`&customer_account_id=${shop}&status=draft`)).toEqual([]);
    expect(await ids('&status=delivered')).toEqual([]);
  });
});

describe('who sees what', () => {
  it('a test token never sees live shipments, and a live token never sees test ones', async () => {
    const { liveToken, testToken } = await createCompany(w);
    const live = await createShipment(w, liveToken);
    const test = await createShipment(w, testToken);
    expect(test.livemode).toBe(false);
    for (const [token, hidden, shown] of [
      [testToken, live, test],
      [liveToken, test, live],
    ] as const) {
      const read = await call(w, 'GET', `/v1/shipments/${hidden.id}`, { token });
      expect(read.status).toBe(404);
      expect(read.body.code).toBe('shipment.not_found');
      const move = await call(w, 'POST', `/v1/shipments/${hidden.id}/status`, {
        token,
        body: { status: 'cancelled' },
      });
      expect(move.status).toBe(404);
      expect((await walk(token, '', 50)).map((s) => s.id)).toEqual([shown.id]);
    }
    const still = await call(w, 'GET', `/v1/shipments/${live.id}`, { token: liveToken });
    expect(still.body.status).toBe('confirmed');
  });

  it('a merchant token sees and makes only its own account’s shipments', async () => {
    const { owner, tenantId, liveToken } = await createCompany(w);
    const [a, b] = await Promise.all(
      ['A', 'B'].map(async (name) => {
        const r = await call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, {
          token: owner.token,
          body: { name },
        });
        return r.body.id as string;
      }),
    );
    const merchantToken = await createApiToken(w, owner, tenantId, { mode: 'live', customer_account_id: a });
    const companyWide = await createShipment(w, liveToken);
    const ofB = await createShipment(w, liveToken, { customer_account_id: b });
    const mine = await createShipment(w, merchantToken);
    expect(mine.customer_account_id).toBe(a);
    const explicit = await createShipment(w, merchantToken, { customer_account_id: a });
    expect(explicit.customer_account_id).toBe(a);
    const elsewhere = await call(w, 'POST', '/v1/shipments', {
      token: merchantToken,
      body: { recipient_name: 'X', currency: 'EUR', customer_account_id: b },
    });
    expect(elsewhere.status).toBe(404);

    for (const other of [companyWide, ofB]) {
      expect((await call(w, 'GET', `/v1/shipments/${other.id}`, { token: merchantToken })).status).toBe(404);
      const move = await call(w, 'POST', `/v1/shipments/${other.id}/status`, {
        token: merchantToken,
        body: { status: 'picked_up' },
      });
      expect(move.status).toBe(404);
    }
    expect((await walk(merchantToken, '', 10)).map((s) => s.id).sort()).toEqual(
      [mine.id, explicit.id].sort(),
    );
    expect(await walk(merchantToken, `&customer_account_id=${b}`, 10)).toEqual([]);
    // The company-wide token sees them all.
    expect(await walk(liveToken, '', 10)).toHaveLength(4);
  });

  it("another company's shipment is 404, like an unknown one", async () => {
    const a = await createCompany(w);
    const b = await createCompany(w);
    const theirs = await createShipment(w, a.liveToken);
    for (const id of [theirs.id, 'shp_doesnotexist']) {
      const read = await call(w, 'GET', `/v1/shipments/${id}`, { token: b.liveToken });
      expect(read.status).toBe(404);
      expect(read.body.code).toBe('shipment.not_found');
      const move = await call(w, 'POST', `/v1/shipments/${id}/status`, {
        token: b.liveToken,
        body: { status: 'cancelled' },
      });
      expect(move.status).toBe(404);
    }
    expect((await call(w, 'GET', `/v1/shipments/${theirs.id}`, { token: a.liveToken })).body.status).toBe(
      'confirmed',
    );
    const foreignAccount = await call(w, 'POST', '/v1/shipments', {
      token: b.liveToken,
      body: { recipient_name: 'X', currency: 'EUR', customer_account_id: 'acct_notyours' },
    });
    expect(foreignAccount.status).toBe(404);
    expect(foreignAccount.body.code).toBe('customer_account.not_found');
  });
});
