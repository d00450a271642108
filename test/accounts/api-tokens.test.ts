import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../http/expect.ts';
import {
  ALL_SCOPES,
  call,
  createCompany,
  createShipment,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;
/** One company with a person in each role, shared by the role tests (people are the slow fixture). */
let cast: Awaited<ReturnType<typeof createCast>>;

async function createCast() {
  const company = await createCompany(w);
  const { owner, tenantId } = company;
  const accounts = await Promise.all(
    ['Shop A', 'Shop B'].map((name) =>
      call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, { token: owner.token, body: { name } }),
    ),
  );
  const [shopA, shopB] = accounts.map((r) => r.body.id as string) as [string, string];
  return {
    ...company,
    shopA,
    shopB,
    admin: await member(tenantId, owner, 'admin'),
    member: await member(tenantId, owner, 'member'),
    viewer: await member(tenantId, owner, 'viewer'),
    merchantAdmin: await member(tenantId, owner, 'merchant_admin', shopA),
    merchantMember: await member(tenantId, owner, 'merchant_member', shopA),
  };
}

beforeAll(async () => {
  w = await startWaybill();
  cast = await createCast();
});
afterAll(async () => {
  await w?.close();
});

const tokensPath = (tenantId: string) => `/v1/companies/${tenantId}/api-tokens`;

async function member(tenantId: string, owner: Person, role: string, customer_account_id?: string) {
  const person = await signUpPerson(w);
  const added = await call(w, 'POST', `/v1/companies/${tenantId}/members`, {
    token: owner.token,
    body: { email: person.email, role, ...(customer_account_id ? { customer_account_id } : {}) },
  });
  expect(added.status).toBe(201);
  return person;
}

describe('API tokens', () => {
  it('shows the secret once, lists without it, and stores only its hash', async () => {
    const { owner, tenantId } = await createCompany(w);
    const created = await call(w, 'POST', tokensPath(tenantId), {
      token: owner.token,
      body: { name: 'Shop sync', mode: 'test', scopes: ['shipments:read'] },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Shop sync',
      mode: 'test',
      scopes: ['shipments:read'],
      customer_account_id: null,
      revoked_at: null,
    });
    expect(created.body.id).toMatch(/^tok_/);
    const secret: string = created.body.token;
    expect(secret).toMatch(/^sk_test_[0-9A-Za-z]{43}$/);

    const list = await call(w, 'GET', tokensPath(tenantId), { token: owner.token });
    const listed = list.body.data.find((t: { id: string }) => t.id === created.body.id);
    expect(listed).toBeDefined();
    expect(listed).not.toHaveProperty('token');
    expect(list.text).not.toContain(secret);

    const rows = await w.ctx.db
      .selectFrom('api_tokens')
      .selectAll()
      .where('tenant_id', '=', tenantId)
      .execute();
    expect(JSON.stringify(rows)).not.toContain(secret);
    expect(JSON.stringify(rows)).not.toContain(secret.slice(8));
  });

  it('a live token makes live shipments, a test token test ones; revoking makes it 401', async () => {
    const { owner, tenantId, liveToken, testToken } = await createCompany(w);
    expect((await createShipment(w, liveToken)).livemode).toBe(true);
    expect((await createShipment(w, testToken)).livemode).toBe(false);

    const list = await call(w, 'GET', tokensPath(tenantId), { token: owner.token });
    const live = list.body.data.find((t: { mode: string }) => t.mode === 'live');
    const revoked = await call(w, 'DELETE', `${tokensPath(tenantId)}/${live.id}`, { token: owner.token });
    expect(revoked.status).toBe(204);
    const after = await call(w, 'GET', '/v1/shipments', { token: liveToken });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('auth.invalid_token');
    expect(after.headers['www-authenticate']).toMatch(/^Bearer/);
    expect((await call(w, 'GET', '/v1/shipments', { token: testToken })).status).toBe(200);
    const again = await call(w, 'DELETE', `${tokensPath(tenantId)}/${live.id}`, { token: owner.token });
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('api_token.not_found');
  });

  it('a token of another company is not found', async () => {
    const a = await createCompany(w);
    const b = await createCompany(w);
    const list = await call(w, 'GET', tokensPath(a.tenantId), { token: a.owner.token });
    const id = list.body.data[0].id;
    const foreign = await call(w, 'DELETE', `${tokensPath(b.tenantId)}/${id}`, { token: b.owner.token });
    expect(foreign.status).toBe(404);
    expect((await call(w, 'GET', '/v1/shipments', { token: a.liveToken })).status).toBe(200);
  });

  it('the role decides who makes tokens and with which scopes', async () => {
    const { owner, tenantId, admin, member: plain, viewer } = cast;
    const before = await countRows(w, 'api_tokens', tenantId);
    const body = { name: 't', mode: 'live', scopes: ['shipments:read'] };

    expect((await call(w, 'POST', tokensPath(tenantId), { token: admin.token, body })).status).toBe(201);
    for (const person of [plain, viewer]) {
      const refused = await call(w, 'POST', tokensPath(tenantId), { token: person.token, body });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('auth.insufficient_scope');
      const beyond = await call(w, 'POST', tokensPath(tenantId), {
        token: person.token,
        body: { ...body, scopes: ['webhooks:write'] },
      });
      expect(beyond.status).toBe(403);
      expect(beyond.body.code).toBe('auth.insufficient_scope');
      expect((await call(w, 'GET', tokensPath(tenantId), { token: person.token })).status).toBe(403);
    }
    const unknownScope = await call(w, 'POST', tokensPath(tenantId), {
      token: owner.token,
      body: { ...body, scopes: ['everything'] },
    });
    expect(unknownScope.status).toBe(400);
    expect(await countRows(w, 'api_tokens', tenantId)).toBe(before + 1);
  });

  it('scopes are enforced: a read-only token cannot write shipments', async () => {
    const { owner, tenantId, liveToken } = await createCompany(w);
    const shipment = await createShipment(w, liveToken);
    const created = await call(w, 'POST', tokensPath(tenantId), {
      token: owner.token,
      body: { name: 'reader', mode: 'live', scopes: ['shipments:read'] },
    });
    const reader: string = created.body.token;
    expect((await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: reader })).status).toBe(200);
    const write = await call(w, 'POST', '/v1/shipments', {
      token: reader,
      body: { recipient_name: 'X', currency: 'EUR' },
    });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('auth.insufficient_scope');
    const move = await call(w, 'POST', `/v1/shipments/${shipment.id}/status`, {
      token: reader,
      body: { status: 'picked_up' },
    });
    expect(move.status).toBe(403);
    expect((await call(w, 'GET', `/v1/shipments/${shipment.id}`, { token: reader })).body.status).toBe(
      'confirmed',
    );
    const webhookOnly = await call(w, 'POST', tokensPath(tenantId), {
      token: owner.token,
      body: { name: 'hooks', mode: 'live', scopes: ['webhooks:read'] },
    });
    const noRead = await call(w, 'GET', '/v1/shipments', { token: webhookOnly.body.token });
    expect(noRead.status).toBe(403);
    expect(noRead.body.code).toBe('auth.insufficient_scope');
  });

  it('a merchant admin makes tokens bound to its own merchant account only', async () => {
    const { owner, tenantId, shopA: a, shopB: b, merchantAdmin, merchantMember } = cast;
    const own = await call(w, 'POST', tokensPath(tenantId), {
      token: merchantAdmin.token,
      body: { name: 'mine', mode: 'live', scopes: ALL_SCOPES },
    });
    expect(own.status).toBe(201);
    expect(own.body.customer_account_id).toBe(a);
    const other = await call(w, 'POST', tokensPath(tenantId), {
      token: merchantAdmin.token,
      body: { name: 'theirs', mode: 'live', scopes: ['shipments:read'], customer_account_id: b },
    });
    expect(other.status).toBe(404);
    const byMember = await call(w, 'POST', tokensPath(tenantId), {
      token: merchantMember.token,
      body: { name: 'x', mode: 'live', scopes: ['shipments:read'] },
    });
    expect(byMember.status).toBe(403);

    // The owner may bind a token to any of the company's accounts, and only to those.
    const bound = await call(w, 'POST', tokensPath(tenantId), {
      token: owner.token,
      body: { name: 'b', mode: 'test', scopes: ['shipments:read'], customer_account_id: b },
    });
    expect(bound.body.customer_account_id).toBe(b);
    const foreign = await call(w, 'POST', tokensPath(tenantId), {
      token: owner.token,
      body: { name: 'f', mode: 'test', scopes: ['shipments:read'], customer_account_id: 'acct_nope' },
    });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('customer_account.not_found');
  });
});

describe('which credential each call takes', () => {
  it('API tokens are refused on person calls; session tokens on shipment calls', async () => {
    const { owner, tenantId, liveToken } = await createCompany(w);
    for (const [method, path] of [
      ['GET', '/v1/me'],
      ['POST', '/v1/companies'],
      ['GET', `/v1/companies/${tenantId}`],
      ['GET', tokensPath(tenantId)],
      ['DELETE', '/v1/auth/sessions/current'],
    ] as const) {
      const response = await call(w, method, path, {
        token: liveToken,
        ...(method === 'POST' ? { body: { name: 'x' } } : {}),
      });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(response.body.code).toBe('auth.session_required');
    }
    for (const [method, path] of [
      ['GET', '/v1/shipments'],
      ['POST', '/v1/shipments'],
      ['GET', '/v1/shipments/shp_x'],
    ] as const) {
      const response = await call(w, method, path, {
        token: owner.token,
        ...(method === 'POST' ? { body: { recipient_name: 'x', currency: 'EUR' } } : {}),
      });
      expect(response.status, `${method} ${path}`).toBe(403);
      expect(response.body.code).toBe('auth.insufficient_scope');
    }
  });
});
