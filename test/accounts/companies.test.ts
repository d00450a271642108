import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

async function companyOf(owner: Person, name = 'Acme Freight') {
  const response = await call(w, 'POST', '/v1/companies', { token: owner.token, body: { name } });
  expect(response.status).toBe(201);
  return response.body.id as string;
}

async function addMember(actor: Person, tenantId: string, body: Record<string, unknown>) {
  return call(w, 'POST', `/v1/companies/${tenantId}/members`, { token: actor.token, body });
}

describe('companies', () => {
  it('the creator owns a new company, which is not live until its owner takes it live', async () => {
    const owner = await signUpPerson(w);
    const created = await call(w, 'POST', '/v1/companies', { token: owner.token, body: { name: 'Acme' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Acme', live: false });
    expect(created.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const tenantId = created.body.id;

    const members = await call(w, 'GET', `/v1/companies/${tenantId}/members`, { token: owner.token });
    expect(members.body.data).toEqual([expect.objectContaining({ user_id: owner.id, role: 'owner' })]);

    const admin = await signUpPerson(w);
    await addMember(owner, tenantId, { email: admin.email, role: 'admin' });
    const byAdmin = await call(w, 'POST', `/v1/companies/${tenantId}/go-live`, { token: admin.token });
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.body.code).toBe('auth.insufficient_scope');
    expect((await call(w, 'GET', `/v1/companies/${tenantId}`, { token: owner.token })).body.live).toBe(false);

    const live = await call(w, 'POST', `/v1/companies/${tenantId}/go-live`, { token: owner.token });
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ id: tenantId, live: true });
  });

  it('a company you are not in is 404, whatever you try', async () => {
    const owner = await signUpPerson(w);
    const stranger = await signUpPerson(w);
    const tenantId = await companyOf(owner);
    for (const [method, path] of [
      ['GET', `/v1/companies/${tenantId}`],
      ['POST', `/v1/companies/${tenantId}/go-live`],
      ['GET', `/v1/companies/${tenantId}/members`],
      ['GET', `/v1/companies/${tenantId}/customer-accounts`],
      ['GET', `/v1/companies/${tenantId}/api-tokens`],
      ['GET', '/v1/companies/00000000-0000-4000-8000-000000000000'],
    ] as const) {
      const response = await call(w, method, path, { token: stranger.token });
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.code).toBe('company.not_found');
    }
  });
});

describe('members', () => {
  it('adds a signed-up person by e-mail with a role; merchant roles name a merchant account', async () => {
    const owner = await signUpPerson(w);
    const tenantId = await companyOf(owner);
    const account = await call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, {
      token: owner.token,
      body: { name: 'Corner Shop' },
    });
    expect(account.status).toBe(201);
    expect(account.body).toMatchObject({ tenant_id: tenantId, name: 'Corner Shop' });
    expect(account.body.id).toMatch(/^acct_/);

    const viewer = await signUpPerson(w);
    const added = await addMember(owner, tenantId, { email: viewer.email.toUpperCase(), role: 'viewer' });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ user_id: viewer.id, role: 'viewer', customer_account_id: null });
    expect((await addMember(owner, tenantId, { email: viewer.email, role: 'admin' })).body.code).toBe(
      'member.already_exists',
    );

    const merchant = await signUpPerson(w);
    const noAccount = await addMember(owner, tenantId, { email: merchant.email, role: 'merchant_admin' });
    expect(noAccount.status).toBe(400);
    expect(noAccount.body.code).toBe('validation.failed');
    const accountOnCompanyRole = await addMember(owner, tenantId, {
      email: merchant.email,
      role: 'member',
      customer_account_id: account.body.id,
    });
    expect(accountOnCompanyRole.status).toBe(400);
    const foreignAccount = await addMember(owner, tenantId, {
      email: merchant.email,
      role: 'merchant_admin',
      customer_account_id: 'acct_doesnotexist',
    });
    expect(foreignAccount.status).toBe(404);
    const merchantAdded = await addMember(owner, tenantId, {
      email: merchant.email,
      role: 'merchant_admin',
      customer_account_id: account.body.id,
    });
    expect(merchantAdded.status).toBe(201);
    expect(merchantAdded.body.customer_account_id).toBe(account.body.id);

    const me = await call(w, 'GET', '/v1/me', { token: merchant.token });
    expect(me.body.memberships).toEqual([
      expect.objectContaining({
        tenant_id: tenantId,
        role: 'merchant_admin',
        customer_account_id: account.body.id,
        customer_account_name: 'Corner Shop',
        manages_integrations: true,
      }),
    ]);
    // A merchant member sees only its own merchant account.
    await call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, {
      token: owner.token,
      body: { name: 'Other Shop' },
    });
    const accounts = await call(w, 'GET', `/v1/companies/${tenantId}/customer-accounts`, {
      token: merchant.token,
    });
    expect(accounts.body.data.map((a: { id: string }) => a.id)).toEqual([account.body.id]);

    const unknown = await addMember(owner, tenantId, { email: 'nobody@example.test', role: 'viewer' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('user.not_found');
  });

  it('only owners and admins add members, and only an owner makes an owner', async () => {
    const owner = await signUpPerson(w);
    const tenantId = await companyOf(owner);
    const [admin, member, newcomer] = [await signUpPerson(w), await signUpPerson(w), await signUpPerson(w)];
    await addMember(owner, tenantId, { email: admin.email, role: 'admin' });
    await addMember(owner, tenantId, { email: member.email, role: 'member' });

    const byMember = await addMember(member, tenantId, { email: newcomer.email, role: 'viewer' });
    expect(byMember.status).toBe(403);
    expect(byMember.body.code).toBe('auth.insufficient_scope');
    const ownerByAdmin = await addMember(admin, tenantId, { email: newcomer.email, role: 'owner' });
    expect(ownerByAdmin.status).toBe(403);
    const byMemberAccount = await call(w, 'POST', `/v1/companies/${tenantId}/customer-accounts`, {
      token: member.token,
      body: { name: 'Nope' },
    });
    expect(byMemberAccount.status).toBe(403);
    expect((await addMember(admin, tenantId, { email: newcomer.email, role: 'viewer' })).status).toBe(201);
  });

  it('removal is the person leaving; the last owner cannot leave', async () => {
    const owner = await signUpPerson(w);
    const tenantId = await companyOf(owner);
    const [coOwner, admin, viewer] = [await signUpPerson(w), await signUpPerson(w), await signUpPerson(w)];
    await addMember(owner, tenantId, { email: coOwner.email, role: 'owner' });
    await addMember(owner, tenantId, { email: admin.email, role: 'admin' });
    await addMember(owner, tenantId, { email: viewer.email, role: 'viewer' });
    const remove = (actor: Person, who: Person) =>
      call(w, 'DELETE', `/v1/companies/${tenantId}/members/${who.id}`, { token: actor.token });

    // A viewer cannot remove others, but can leave.
    expect((await remove(viewer, admin)).status).toBe(403);
    expect((await remove(viewer, viewer)).status).toBe(204);
    expect((await call(w, 'GET', `/v1/companies/${tenantId}`, { token: viewer.token })).status).toBe(404);
    expect((await call(w, 'GET', '/v1/me', { token: viewer.token })).body.memberships).toEqual([]);
    expect((await remove(owner, viewer)).body.code).toBe('member.not_found');

    // An admin does not remove an owner.
    expect((await remove(admin, coOwner)).status).toBe(403);
    expect((await remove(owner, coOwner)).status).toBe(204);

    const last = await remove(owner, owner);
    expect(last.status).toBe(409);
    expect(last.body.code).toBe('member.last_owner');
    const members = await call(w, 'GET', `/v1/companies/${tenantId}/members`, { token: owner.token });
    expect(members.body.data.map((m: { user_id: string }) => m.user_id).sort()).toEqual(
      [owner.id, admin.id].sort(),
    );
  });

  it('lists members in pages', async () => {
    const owner = await signUpPerson(w);
    const tenantId = await companyOf(owner);
    for (let i = 0; i < 2; i++) {
      const person = await signUpPerson(w);
      await addMember(owner, tenantId, { email: person.email, role: 'viewer' });
    }
    const first = await call(w, 'GET', `/v1/companies/${tenantId}/members?limit=2`, { token: owner.token });
    expect(first.body.data).toHaveLength(2);
    expect(first.body.next_cursor).toEqual(expect.any(String));
    const second = await call(
      w,
      'GET',
      `/v1/companies/${tenantId}/members?limit=2&cursor=${first.body.next_cursor}`,
      { token: owner.token },
    );
    expect(second.body.data).toHaveLength(1);
    expect(second.body.next_cursor).toBeNull();
  });
});
