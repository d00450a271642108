import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, HOUR } from '../../src/lib/clock.ts';
import { call, createApiToken, createCompany, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

async function shipmentsOf(tenantId: string) {
  return w.ctx.db
    .selectFrom('shipments')
    .select(['id', 'recipient_name'])
    .where('tenant_id', '=', tenantId)
    .execute();
}

const post = (token: string, key: string, body: Record<string, unknown>, path = '/v1/shipments') =>
  call(w, 'POST', path, { token, body, headers: { 'idempotency-key': key } });

describe('Idempotency-Key', () => {
  it('the same key and body answer the first answer again; another body is 409', async () => {
    const { tenantId, liveToken } = await createCompany(w);
    const body = { recipient_name: 'Ada', currency: 'EUR' };
    const first = await post(liveToken, 'order-1', body);
    expect(first.status).toBe(201);
    const again = await post(liveToken, 'order-1', body);
    expect(again.status).toBe(201);
    expect(again.text).toBe(first.text);
    expect(again.headers['idempotent-replayed']).toBe('true');

    const other = await post(liveToken, 'order-1', { ...body, recipient_name: 'Grace' });
    expect(other.status).toBe(409);
    expect(other.body.code).toBe('idempotency.key_reused');
    expect(other.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(await shipmentsOf(tenantId)).toEqual([{ id: first.body.id, recipient_name: 'Ada' }]);

    // A move is a POST too: replaying it does not move twice, nor fail as a forbidden move.
    const path = `/v1/shipments/${first.body.id}/status`;
    const moved = await post(liveToken, 'move-1', { status: 'picked_up' }, path);
    const replayed = await post(liveToken, 'move-1', { status: 'picked_up' }, path);
    expect([moved.status, replayed.status]).toEqual([200, 200]);
    expect(replayed.text).toBe(moved.text);
  });

  it('an error answer is replayed too, and a too long key is refused', async () => {
    const { tenantId, liveToken } = await createCompany(w);
    const bad = { recipient_name: 'Ada', currency: 'XXY' };
    const first = await post(liveToken, 'bad-1', bad);
    expect(first.status).toBe(400);
    const again = await post(liveToken, 'bad-1', bad);
    expect(again.status).toBe(400);
    expect(again.text).toBe(first.text);
    expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
    const long = await post(liveToken, 'k'.repeat(256), { recipient_name: 'Ada', currency: 'EUR' });
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('validation.failed');
    expect(await shipmentsOf(tenantId)).toEqual([]);
  });

  it('keys belong to the credential that sent them', async () => {
    const { owner, tenantId, liveToken } = await createCompany(w);
    const second = await createApiToken(w, owner, tenantId, { mode: 'live' });
    const body = { recipient_name: 'Ada', currency: 'EUR' };
    const a = await post(liveToken, 'shared-key', body);
    const b = await post(second, 'shared-key', body);
    expect([a.status, b.status]).toEqual([201, 201]);
    expect(a.body.id).not.toBe(b.body.id);
    const other = await createCompany(w);
    const c = await post(other.liveToken, 'shared-key', { ...body, recipient_name: 'Other' });
    expect(c.status).toBe(201);
    expect(await shipmentsOf(tenantId)).toHaveLength(2);
  });

  it('a key is forgotten after 24 hours', async () => {
    const { tenantId, liveToken } = await createCompany(w);
    const body = { recipient_name: 'Ada', currency: 'EUR' };
    const first = await post(liveToken, 'daily', body);
    w.clock.advance(23 * HOUR);
    expect((await post(liveToken, 'daily', body)).body.id).toBe(first.body.id);
    expect((await post(liveToken, 'daily', { ...body, recipient_name: 'B' })).status).toBe(409);
    w.clock.advance(DAY - 23 * HOUR + 1);
    const later = await post(liveToken, 'daily', { ...body, recipient_name: 'B' });
    expect(later.status).toBe(201);
    expect(later.body.id).not.toBe(first.body.id);
    expect(await shipmentsOf(tenantId)).toHaveLength(2);
  });

  it('concurrent requests with one key create one shipment', async () => {
    const { tenantId, liveToken } = await createCompany(w);
    const body = JSON.stringify({ recipient_name: 'Ada', currency: 'EUR' });
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        fetch(`${w.url}/v1/shipments`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${liveToken}`,
            'content-type': 'application/json',
            'idempotency-key': 'race',
          },
          body,
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as Json })),
      ),
    );
    const made = await shipmentsOf(tenantId);
    expect(made).toHaveLength(1);
    for (const answer of answers) {
      if (answer.status === 201) expect(answer.body.id).toBe(made[0]?.id);
      else expect(answer).toMatchObject({ status: 409, body: { code: 'idempotency.in_progress' } });
    }
    expect(answers.some((a) => a.status === 201)).toBe(true);
  });

  it('works on the person calls too', async () => {
    const { owner } = await createCompany(w);
    const first = await post(owner.token, 'co-1', { name: 'Once Ltd' }, '/v1/companies');
    const again = await post(owner.token, 'co-1', { name: 'Once Ltd' }, '/v1/companies');
    expect(again.body.id).toBe(first.body.id);
    const me = await call(w, 'GET', '/v1/me', { token: owner.token });
    expect(
      me.body.memberships.filter((m: { company_name: string }) => m.company_name === 'Once Ltd'),
    ).toHaveLength(1);
  });
});
