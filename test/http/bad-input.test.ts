import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { countRows, expectProblem } from './expect.ts';

let w: TestWaybill;
let company: CompanyFixture;

beforeAll(async () => {
  w = await startWaybill();
  company = await createCompany(w);
});
afterAll(async () => {
  await w?.close();
});

async function counts() {
  const tables = ['shipments', 'events', 'users', 'companies'] as const;
  return Promise.all(tables.map((table) => countRows(w, table)));
}

const valid = { recipient_name: 'Ada', currency: 'EUR' };
const long = (n: number) => 'x'.repeat(n);

describe('bad input changes nothing and answers problem details', () => {
  it('malformed JSON and wrong content types', async () => {
    const before = await counts();
    const token = company.liveToken;
    const json = { 'content-type': 'application/json' };
    expectProblem(
      await call(w, 'POST', '/v1/shipments', { token, rawBody: '{"recipient_name": "Ada",', headers: json }),
      400,
      'request.malformed_json',
    );
    expectProblem(
      await call(w, 'POST', '/v1/auth/signup', { rawBody: '{nope}', headers: json }),
      400,
      'request.malformed_json',
    );
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'text/html']) {
      expectProblem(
        await call(w, 'POST', '/v1/shipments', {
          token,
          rawBody: type.includes('urlencoded') ? 'recipient_name=Ada&currency=EUR' : JSON.stringify(valid),
          headers: { 'content-type': type },
        }),
        415,
        'request.unsupported_media_type',
      );
    }
    expectProblem(
      await call(w, 'POST', '/v1/companies', {
        token: company.owner.token,
        rawBody: 'name=Sneaky',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
      'request.unsupported_media_type',
    );
    expect(await counts()).toEqual(before);
  });

  it('wrong types, unknown fields, missing fields, overlong strings, unknown values', async () => {
    const before = await counts();
    const token = company.liveToken;
    const bodies: Array<Record<string, unknown> | unknown[] | string | number | null> = [
      [],
      'text',
      42,
      null,
      {},
      { ...valid, recipient_name: 42 },
      { ...valid, recipient_name: '' },
      { ...valid, currency: 978 },
      { ...valid, surprise: true },
      { ...valid, status: 'delivered' },
      { ...valid, status: 'nonsense' },
      { ...valid, payment_mode: 'barter' },
      { ...valid, recipient_name: long(201) },
      { ...valid, external_ref: long(101) },
      { ...valid, recipient_email: `${long(250)}@example.test` },
      { ...valid, recipient_email: 'not-an-email' },
      { ...valid, recipient_phone: long(40) },
      { ...valid, customer_account_id: long(65) },
      { ...valid, parcels: [{ weight_grams: 1, reference: long(101) }] },
      { ...valid, parcels: [{ weight_grams: '1' }] },
      { ...valid, parcels: [{ weight_grams: 1, colour: 'red' }] },
      { ...valid, parcels: [{}] },
      { ...valid, parcels: Array.from({ length: 51 }, () => ({ weight_grams: 1 })) },
    ];
    for (const body of bodies) {
      const response = await call(w, 'POST', '/v1/shipments', { token, body });
      expectProblem(response, 400, 'validation.failed');
      expect(response.body.errors, JSON.stringify(body).slice(0, 80)).toEqual(
        expect.arrayContaining([{ path: expect.any(String), message: expect.any(String) }]),
      );
    }
    const unknownField = await call(w, 'POST', '/v1/shipments', {
      token,
      body: { ...valid, surprise: true },
    });
    expect(unknownField.body.errors).toContainEqual(expect.objectContaining({ path: '/surprise' }));

    const person = company.owner.token;
    for (const [path, body] of [
      ['/v1/auth/signup', { email: 'a@example.test', password: long(201), name: 'A' }],
      ['/v1/auth/signup', { email: 'a@example.test', password: long(20), name: long(201) }],
      ['/v1/auth/signup', { email: `${long(250)}@example.test`, password: long(20), name: 'A' }],
      ['/v1/auth/signup', { email: 'a@example.test', password: long(20), name: 'A', admin: true }],
      ['/v1/auth/sessions', { email: 'a@example.test', password: long(201) }],
      ['/v1/companies', { name: long(201) }],
      ['/v1/companies', { name: 7 }],
      [`/v1/companies/${company.tenantId}/customer-accounts`, { name: long(201) }],
      [`/v1/companies/${company.tenantId}/members`, { email: 'a@example.test', role: 'emperor' }],
      [
        `/v1/companies/${company.tenantId}/api-tokens`,
        { name: long(201), mode: 'live', scopes: ['shipments:read'] },
      ],
      [
        `/v1/companies/${company.tenantId}/api-tokens`,
        { name: 'x', mode: 'staging', scopes: ['shipments:read'] },
      ],
      [`/v1/companies/${company.tenantId}/api-tokens`, { name: 'x', mode: 'live', scopes: [] }],
    ] as const) {
      expectProblem(await call(w, 'POST', path, { token: person, body }), 400, 'validation.failed');
    }
    expect(await counts()).toEqual(before);
  });

  it('unknown ids and routes are 404', async () => {
    const token = company.liveToken;
    expectProblem(await call(w, 'GET', '/v1/shipments/shp_unknown', { token }), 404, 'shipment.not_found');
    expectProblem(
      await call(w, 'POST', '/v1/shipments/shp_unknown/status', { token, body: { status: 'cancelled' } }),
      404,
      'shipment.not_found',
    );
    expectProblem(await call(w, 'GET', `/v1/shipments/${long(65)}`, { token }), 400, 'validation.failed');
    expectProblem(await call(w, 'GET', '/v1/nothing-here', { token }), 404, 'request.not_found');
    expectProblem(
      await call(w, 'DELETE', `/v1/companies/${company.tenantId}/api-tokens/tok_unknown`, {
        token: company.owner.token,
      }),
      404,
      'api_token.not_found',
    );
    expectProblem(
      await call(w, 'DELETE', `/v1/companies/${company.tenantId}/members/usr_unknown`, {
        token: company.owner.token,
      }),
      404,
      'member.not_found',
    );
  });
});

describe('tokens', () => {
  it('missing, malformed, unknown, revoked and expired tokens are 401 with WWW-Authenticate', async () => {
    const shipment = await createShipment(w, company.liveToken);
    const fresh = await createCompany(w);
    const list = await call(w, 'GET', `/v1/companies/${fresh.tenantId}/api-tokens`, {
      token: fresh.owner.token,
    });
    for (const t of list.body.data) {
      await call(w, 'DELETE', `/v1/companies/${fresh.tenantId}/api-tokens/${t.id}`, {
        token: fresh.owner.token,
      });
    }
    await call(w, 'DELETE', '/v1/auth/sessions/current', { token: fresh.owner.token });

    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer' },
      { authorization: `Bearer ${company.liveToken} extra` },
      { authorization: 'Bearer sk_live_0000000000000000000000000000000000000000000' },
      { authorization: 'Bearer ust_0000000000000000000000000000000000000000000' },
      { authorization: `Bearer ${company.liveToken}x` },
      { authorization: `Bearer sk_live_${long(300)}` },
      { authorization: `Bearer ${fresh.liveToken}` },
      { authorization: `Bearer ${fresh.testToken}` },
    ];
    for (const headers of attempts) {
      const response = await call(w, 'GET', `/v1/shipments/${shipment.id}`, { headers });
      expectProblem(response, 401, 'auth.invalid_token');
      // RFC 6750 section 3.1: with credentials sent, the challenge says invalid_token.
      expect(response.headers['www-authenticate']).toBe(
        headers.authorization ? 'Bearer realm="waybill", error="invalid_token"' : 'Bearer realm="waybill"',
      );
      const write = await call(w, 'POST', '/v1/shipments', { headers, body: valid });
      expectProblem(write, 401, 'auth.invalid_token');
    }
    expectProblem(await call(w, 'GET', '/v1/me', { token: fresh.owner.token }), 401, 'auth.invalid_token');
    // The scheme name is case-insensitive (RFC 9110 section 11.1).
    const lower = await call(w, 'GET', `/v1/shipments/${shipment.id}`, {
      headers: { authorization: `bearer ${company.liveToken}` },
    });
    expect(lower.status).toBe(200);
  });
});
