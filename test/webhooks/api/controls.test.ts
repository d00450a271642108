import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';

const URL = 'http://127.0.0.1:9/hooks';

describe('the delivery controls of an endpoint (CONTRACT.md)', () => {
  let w: TestWaybill;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    const { createCompany } = await import('../../support/api.ts');
    company = await createCompany(w);
  });
  afterAll(async () => {
    await w?.close();
  });

  const create = (body: Record<string, unknown>) =>
    call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.testToken,
      body: { url: URL, event_types: ['shipment.created'], ...body },
    });

  it('defaults to no limit, no order, no headers and no pause', async () => {
    const created = await create({});
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      rate_limit: null,
      ordering: 'none',
      headers: {},
      paused_until: null,
    });
  });

  it('sets the rate limit, the ordering and the headers at creation and by PATCH, and reads them back', async () => {
    const created = await create({
      rate_limit: 5,
      ordering: 'per_shipment',
      headers: { 'X-Route': 'eu-1', Authorization: 'Bearer sk_receiver_0123456789abcd' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      rate_limit: 5,
      ordering: 'per_shipment',
      headers: { 'X-Route': 'eu-1', Authorization: '••••••••abcd' },
    });
    const id = created.body.id;
    const patched = await call(w, 'PATCH', `/v1/webhook-endpoints/${id}`, {
      token: company.testToken,
      body: { rate_limit: null, ordering: 'none' },
    });
    expect(patched.status).toBe(200);
    // Headers not named in the PATCH stay as they were.
    expect(patched.body).toMatchObject({
      rate_limit: null,
      ordering: 'none',
      headers: { 'X-Route': 'eu-1' },
    });
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.testToken });
    expect(read.body.headers).toEqual({ 'X-Route': 'eu-1', Authorization: '••••••••abcd' });
  });

  it('keeps the stored credential when a client sends back the masked value it read', async () => {
    const created = await create({ headers: { authorization: 'Bearer token-kept-0123456789' } });
    const id = created.body.id;
    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.testToken });
    const patched = await call(w, 'PATCH', `/v1/webhook-endpoints/${id}`, {
      token: company.testToken,
      body: { headers: { ...read.body.headers, 'x-extra': 'one' } },
    });
    expect(patched.status).toBe(200);
    const row = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .select('headers_sealed')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(JSON.parse(w.ctx.secrets.open(row.headers_sealed as string))).toEqual({
      authorization: 'Bearer token-kept-0123456789',
      'x-extra': 'one',
    });
    const cleared = await call(w, 'PATCH', `/v1/webhook-endpoints/${id}`, {
      token: company.testToken,
      body: { headers: null },
    });
    expect(cleared.body.headers).toEqual({});
  });

  it('keeps header values encrypted at rest', async () => {
    const created = await create({ headers: { 'x-api-key': 'plain-secret-value-42' } });
    const { rows } = await w.ctx.db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('id', '=', created.body.id)
      .execute()
      .then((rows) => ({ rows }));
    expect(JSON.stringify(rows)).not.toContain('plain-secret-value-42');
    expect(created.body.headers['x-api-key']).toBe('••••••••e-42');
  });

  it.each([
    'webhook-id',
    'Webhook-Signature',
    'content-type',
    'Content-Length',
    'user-agent',
    'host',
    'connection',
    'transfer-encoding',
    'proxy-authorization',
  ])('refuses the reserved name %s with 422 validation.failed, and changes nothing', async (name) => {
    const refused = await create({ headers: { [name]: 'x' } });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ code: 'validation.failed' });
    expect(refused.body.errors).toEqual([{ path: `/headers/${name}`, message: expect.any(String) }]);
  });

  it('refuses malformed headers, too many, a value over a line, and rate limits out of range with 400', async () => {
    const cases: Array<Record<string, unknown>> = [
      { headers: { 'bad name': 'x' } },
      { headers: { 'x-a': 'line\r\nx-injected: 1' } },
      { headers: { 'x-a': 'one', 'X-A': 'two' } },
      { headers: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`x-h${i}`, 'v'])) },
      { rate_limit: 0 },
      { rate_limit: 10_001 },
      { rate_limit: 2.5 },
      { ordering: 'per_endpoint' },
    ];
    const before = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.testToken });
    for (const body of cases) {
      const refused = await create(body);
      expect(refused.status, JSON.stringify(body)).toBe(400);
      expect(refused.body.code).toBe('validation.failed');
    }
    const after = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.testToken });
    expect(after.body.data.length).toBe(before.body.data.length);
  });
});
