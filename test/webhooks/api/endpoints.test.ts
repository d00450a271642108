import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createApiToken, createCompany } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { createEndpoint, createMerchant, type Receiver, startReceiver } from './support.ts';

const ENDPOINT_FIELDS = [
  'api_version',
  'api_version_sunset_at',
  'created_at',
  'customer_account_id',
  'kind',
  'destination',
  'description',
  'enabled',
  'disabled_reason',
  'event_types',
  'filter',
  'id',
  'installation_id',
  'held_reason',
  'withheld_event_types',
  'livemode',
  'updated_at',
  'url',
  'rate_limit',
  'ordering',
  'headers',
  'paused_until',
].sort();

describe('webhook endpoints API', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    company = await createCompany(w);
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  it('creates an endpoint that carries its secret once, then reads, lists, updates and deletes it', async () => {
    const created = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: {
        url: receiver.url,
        event_types: ['shipment.created', 'shipment.delivered'],
        description: 'Orders',
      },
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual([...ENDPOINT_FIELDS, 'secret'].sort());
    expect(created.body).toMatchObject({
      url: receiver.url,
      description: 'Orders',
      event_types: ['shipment.created', 'shipment.delivered'],
      livemode: true,
      enabled: true,
      disabled_reason: null,
      installation_id: null,
      held_reason: null,
      withheld_event_types: [],
      customer_account_id: null,
    });
    expect(created.body.id).toMatch(/^we_/);
    expect(created.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.body.secret.slice(6), 'base64')).toHaveLength(32);
    const id = created.body.id;

    const read = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    expect(read.status).toBe(200);
    expect(Object.keys(read.body).sort()).toEqual(ENDPOINT_FIELDS);

    const list = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    expect(list.status).toBe(200);
    expect(list.body.next_cursor).toBeNull();
    expect(list.body.data.map((e: { id: string }) => e.id)).toContain(id);
    expect(list.body.data.every((e: object) => !('secret' in e))).toBe(true);

    w.clock.advance(1000);
    const patched = await call(w, 'PATCH', `/v1/webhook-endpoints/${id}`, {
      token: company.liveToken,
      body: { event_types: ['shipment.exception'], description: null },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ event_types: ['shipment.exception'], description: null });
    expect(patched.body.updated_at > patched.body.created_at).toBe(true);

    const removed = await call(w, 'DELETE', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    expect(removed.status).toBe(204);
    const gone = await call(w, 'GET', `/v1/webhook-endpoints/${id}`, { token: company.liveToken });
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('webhook_endpoint.not_found');
  });

  it('disables manually and enables again, clearing the reason', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, { url: receiver.url });
    const path = `/v1/webhook-endpoints/${endpoint.id}`;
    const off = await call(w, 'PATCH', path, { token: company.liveToken, body: { enabled: false } });
    expect(off.body).toMatchObject({ enabled: false, disabled_reason: 'manual' });
    const on = await call(w, 'PATCH', path, { token: company.liveToken, body: { enabled: true } });
    expect(on.body).toMatchObject({ enabled: true, disabled_reason: null });
    await call(w, 'DELETE', path, { token: company.liveToken });
  });

  it('reveals the secret and rotates it', async () => {
    const endpoint = await createEndpoint(w, company.liveToken, { url: receiver.url });
    const path = `/v1/webhook-endpoints/${endpoint.id}`;
    const revealed = await call(w, 'GET', `${path}/secret`, { token: company.liveToken });
    expect(revealed.status).toBe(200);
    expect(revealed.body).toEqual({ secret: endpoint.secret });

    const rotated = await call(w, 'POST', `${path}/rotate-secret`, { token: company.liveToken });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).toMatch(/^whsec_/);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    const after = await call(w, 'GET', `${path}/secret`, { token: company.liveToken });
    expect(after.body.secret).toBe(rotated.body.secret);

    // Revealing a signing secret needs webhooks:write; a read-only token sees the endpoint only.
    const reader = await createApiToken(w, company.owner, company.tenantId, {
      mode: 'live',
      scopes: ['webhooks:read'],
    });
    expect((await call(w, 'GET', path, { token: reader })).status).toBe(200);
    const refused = await call(w, 'GET', `${path}/secret`, { token: reader });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('auth.insufficient_scope');
    await call(w, 'DELETE', path, { token: company.liveToken });
  });

  it('checks event types: known ones, at least one, none twice', async () => {
    const post = (event_types: unknown) =>
      call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.liveToken,
        body: { url: receiver.url, event_types },
      });
    const unknown = await post(['shipment.teleported']);
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('webhook_endpoint.invalid_event_type');
    const empty = await post([]);
    expect(empty.status).toBe(400);
    expect(empty.body.code).toBe('validation.failed');
    const twice = await post(['shipment.created', 'shipment.created']);
    expect(twice.status).toBe(400);
    expect(twice.body.code).toBe('validation.failed');
    const extra = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'], secret: 'whsec_mine' },
    });
    expect(extra.status).toBe(400);
    const list = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    expect(list.body.data).toHaveLength(0);
  });

  it('needs webhooks:write to change and webhooks:read to read', async () => {
    const shipper = await createApiToken(w, company.owner, company.tenantId, {
      mode: 'live',
      scopes: ['shipments:write'],
    });
    const create = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: shipper,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(create.status).toBe(403);
    expect((await call(w, 'GET', '/v1/webhook-endpoints', { token: shipper })).status).toBe(403);
    expect((await call(w, 'GET', '/v1/webhook-endpoints')).status).toBe(401);
    // A person's session token is not an API token.
    expect((await call(w, 'GET', '/v1/webhook-endpoints', { token: company.owner.token })).status).toBe(403);
  });

  it('allows 5 endpoints per company and per merchant account, each apart', async () => {
    const other = await createCompany(w, 'Limits');
    for (let i = 0; i < 5; i += 1) await createEndpoint(w, other.liveToken, { url: `${receiver.url}/${i}` });
    const sixth = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: other.liveToken,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(sixth.status).toBe(409);
    expect(sixth.body.code).toBe('webhook_endpoint.limit_reached');

    // A merchant account has its own five, and merchant endpoints do not count against the company.
    const merchant = await createMerchant(w, other);
    const made = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call(w, 'POST', '/v1/webhook-endpoints', {
          token: merchant.token,
          body: { url: `${receiver.url}/m${i}`, event_types: ['shipment.created'] },
        }),
      ),
    );
    // Created at once: the company-row lock lets exactly five through.
    expect(made.map((r) => r.status).sort()).toEqual([201, 201, 201, 201, 201, 409]);
    expect(
      made.filter((r) => r.status === 201).every((r) => r.body.customer_account_id === merchant.accountId),
    ).toBe(true);
    // Test mode is a separate environment with its own five.
    await createEndpoint(w, other.testToken, { url: receiver.url });
  });

  it('answers the same create again for the same Idempotency-Key, and 409 for another body', async () => {
    const other = await createCompany(w, 'Idempotent');
    const send = (url: string) =>
      call(w, 'POST', '/v1/webhook-endpoints', {
        token: other.liveToken,
        headers: { 'idempotency-key': 'create-endpoint-1' },
        body: { url, event_types: ['shipment.created'] },
      });
    const first = await send(receiver.url);
    const again = await send(receiver.url);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body.id).toBe(first.body.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const reused = await send(`${receiver.url}/other`);
    expect(reused.status).toBe(409);
    expect(reused.body.code).toBe('idempotency.key_reused');
    const list = await call(w, 'GET', '/v1/webhook-endpoints', { token: other.liveToken });
    expect(list.body.data).toHaveLength(1);
  });

  it('pages the endpoint list with a cursor', async () => {
    const other = await createCompany(w, 'Paging');
    const ids: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      w.clock.advance(1000);
      ids.push((await createEndpoint(w, other.liveToken, { url: receiver.url })).id);
    }
    const first = await call(w, 'GET', '/v1/webhook-endpoints?limit=2', { token: other.liveToken });
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
    const second = await call(w, 'GET', `/v1/webhook-endpoints?limit=2&cursor=${first.body.next_cursor}`, {
      token: other.liveToken,
    });
    expect(second.body.data.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    expect(second.body.next_cursor).toBeNull();
  });
});
