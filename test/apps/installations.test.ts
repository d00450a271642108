import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, newId } from '../../src/lib/ids.ts';
import { type UninstalledInstallation, uninstallListeners } from '../../src/modules/apps/registry.ts';
import { type CompanyFixture, call, createCompany, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { install, issueAppTokens, registerApp } from './fixtures.ts';

let w: TestWaybill;
let company: CompanyFixture;
let admin: Person;
let member: Person;
let merchantA: Person;
let accountA: string;
let accountB: string;
let appId: string;
let appName: string;
let installs: { company: string; a: string; b: string };

async function addMember(person: Person, role: string, customer_account_id?: string) {
  const response = await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
    token: company.owner.token,
    body: { email: person.email, role, ...(customer_account_id ? { customer_account_id } : {}) },
  });
  expect(response.status).toBe(201);
}

async function account(name: string): Promise<string> {
  const response = await call(w, 'POST', `/v1/companies/${company.tenantId}/customer-accounts`, {
    token: company.owner.token,
    body: { name },
  });
  return response.body.id;
}

async function insertEndpoint(installationId: string | null, customerAccountId: string | null) {
  const now = w.clock.now();
  const id = newId('we');
  await w.ctx.db
    .insertInto('webhook_endpoints')
    .values({
      id,
      tenant_id: company.tenantId,
      customer_account_id: customerAccountId,
      installation_id: installationId,
      livemode: true,
      url: 'https://receiver.example/hook',
      description: null,
      event_types: JSON.stringify(['shipment.created']),
      enabled: true,
      disabled_reason: null,
      secret_sealed: w.ctx.secrets.seal('whsec_test'),
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      failing_since: null,
      failing_noticed_at: null,
      kind: 'endpoint',
      app_id: null,
      held: false,
      rate_limit: null,
      ordering: 'none',
      headers_sealed: null,
      paused_until: null,
      created_by: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

const installationsPath = () => `/v1/companies/${company.tenantId}/installations`;
const ids = (body: { data: Array<{ id: string }> }) => body.data.map((i) => i.id).sort();

beforeAll(async () => {
  w = await startWaybill();
  company = await createCompany(w, 'Installing Co');
  [admin, member, merchantA] = [await signUpPerson(w), await signUpPerson(w), await signUpPerson(w)];
  accountA = await account('Store A');
  accountB = await account('Store B');
  await addMember(admin, 'admin');
  await addMember(member, 'member');
  await addMember(merchantA, 'merchant_admin', accountA);
  const developer = await signUpPerson(w, 'Developer');
  const app = await registerApp(w, developer);
  appId = app.id;
  appName = app.name;
  const base = { appId, tenantId: company.tenantId };
  installs = {
    company: (await install(w, { ...base, userId: company.owner.id })).id,
    a: (await install(w, { ...base, userId: merchantA.id, customerAccountId: accountA })).id,
    b: (await install(w, { ...base, userId: company.owner.id, customerAccountId: accountB })).id,
  };
});
afterAll(async () => {
  await w?.close();
});

describe('installations API', () => {
  it('lists every installation of the company to owners and admins', async () => {
    for (const person of [company.owner, admin]) {
      const list = await call(w, 'GET', installationsPath(), { token: person.token });
      expect(list.status).toBe(200);
      expect(ids(list.body)).toEqual(Object.values(installs).sort());
      expect(list.body.next_cursor).toBeNull();
    }
    const one = await call(w, 'GET', `${installationsPath()}/${installs.a}`, { token: admin.token });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({
      id: installs.a,
      app_id: appId,
      app_name: appName,
      app_status: 'private',
      held_reason: null,
      tenant_id: company.tenantId,
      customer_account_id: accountA,
      scopes: ['shipments:read', 'webhooks:write'],
      user_id: merchantA.id,
      approved_by: merchantA.id,
      approved_at: w.clock.now().toISOString(),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it('pages the list', async () => {
    const first = await call(w, 'GET', `${installationsPath()}?limit=2`, { token: company.owner.token });
    expect(first.body.data).toHaveLength(2);
    const rest = await call(w, 'GET', `${installationsPath()}?limit=2&cursor=${first.body.next_cursor}`, {
      token: company.owner.token,
    });
    expect(rest.body.data).toHaveLength(1);
    expect([...ids(first.body), ...ids(rest.body)].sort()).toEqual(Object.values(installs).sort());
  });

  it("shows a merchant admin only its own account's installation", async () => {
    const list = await call(w, 'GET', installationsPath(), { token: merchantA.token });
    expect(list.status).toBe(200);
    expect(ids(list.body)).toEqual([installs.a]);
    for (const other of [installs.b, installs.company]) {
      const read = await call(w, 'GET', `${installationsPath()}/${other}`, { token: merchantA.token });
      expect(read.status).toBe(404);
      expect(read.body.code).toBe('installation.not_found');
      const removed = await call(w, 'DELETE', `${installationsPath()}/${other}`, { token: merchantA.token });
      expect(removed.status).toBe(404);
    }
    const still = await w.ctx.db
      .selectFrom('installations')
      .select('id')
      .where('app_id', '=', appId)
      .execute();
    expect(still).toHaveLength(3);
  });

  it('refuses members who do not manage integrations, strangers, tokens, and no token', async () => {
    const forMember = await call(w, 'GET', installationsPath(), { token: member.token });
    expect(forMember.status).toBe(403);
    expect(forMember.body.code).toBe('auth.insufficient_scope');
    const memberDelete = await call(w, 'DELETE', `${installationsPath()}/${installs.company}`, {
      token: member.token,
    });
    expect(memberDelete.status).toBe(403);
    const stranger = await signUpPerson(w);
    const forStranger = await call(w, 'GET', installationsPath(), { token: stranger.token });
    expect(forStranger.status).toBe(404);
    expect(forStranger.body.code).toBe('company.not_found');
    const withApiToken = await call(w, 'GET', installationsPath(), { token: company.liveToken });
    expect(withApiToken.status).toBe(403);
    expect(withApiToken.body.code).toBe('auth.session_required');
    const withoutToken = await call(w, 'DELETE', `${installationsPath()}/${installs.company}`);
    expect(withoutToken.status).toBe(401);
  });

  it('uninstalling ends every token of the installation and deletes its endpoints, and only its own', async () => {
    const seen: UninstalledInstallation[] = [];
    const listener = async (_ctx: unknown, _trx: unknown, removed: UninstalledInstallation) => {
      seen.push(removed);
    };
    uninstallListeners.push(listener);
    try {
      const { accessToken } = await issueAppTokens(w, {
        appId,
        installationId: installs.a,
        userId: merchantA.id,
      });
      const other = await issueAppTokens(w, { appId, installationId: installs.b, userId: company.owner.id });
      const now = w.clock.now();
      await w.ctx.db
        .insertInto('oauth_codes')
        .values({
          code_hash: hashSecret('atc_pending'),
          app_id: appId,
          installation_id: installs.a,
          tenant_id: company.tenantId,
          user_id: merchantA.id,
          redirect_uri: 'https://carrier-sync.example/oauth/callback',
          code_challenge: 'x'.repeat(43),
          scopes: JSON.stringify(['shipments:read']),
          created_at: now,
          expires_at: new Date(now.getTime() + 60_000),
          used_at: null,
        })
        .execute();
      const endpointOfInstallation = await insertEndpoint(installs.a, accountA);
      const endpointOfOther = await insertEndpoint(installs.b, accountB);
      const endpointOfCompany = await insertEndpoint(null, null);

      const before = await call(w, 'GET', '/v1/shipments', { token: accessToken });
      expect(before.status).toBe(200);

      const removed = await call(w, 'DELETE', `${installationsPath()}/${installs.a}`, {
        token: merchantA.token,
      });
      expect(removed.status).toBe(204);
      expect(removed.text).toBe('');

      const tokens = await w.ctx.db
        .selectFrom('oauth_tokens')
        .select('installation_id')
        .where('app_id', '=', appId)
        .execute();
      expect(tokens.map((t) => t.installation_id)).toEqual([installs.b, installs.b]);
      const codes = await w.ctx.db
        .selectFrom('oauth_codes')
        .select('code_hash')
        .where('installation_id', '=', installs.a)
        .execute();
      expect(codes).toHaveLength(0);
      // Endpoints only: the app's events target (its app.uninstalled is on the way) is not one.
      const endpoints = await w.ctx.db
        .selectFrom('webhook_endpoints')
        .select('id')
        .where('kind', '=', 'endpoint')
        .execute();
      expect(endpoints.map((e) => e.id).sort()).toEqual([endpointOfOther, endpointOfCompany].sort());
      expect(endpoints.map((e) => e.id)).not.toContain(endpointOfInstallation);

      const after = await call(w, 'GET', '/v1/shipments', { token: accessToken });
      expect(after.status).toBe(401);
      const otherStill = await call(w, 'GET', '/v1/shipments', { token: other.accessToken });
      expect(otherStill.status).toBe(200);

      expect(seen).toEqual([
        {
          id: installs.a,
          app_id: appId,
          tenant_id: company.tenantId,
          customer_account_id: accountA,
          uninstalled_at: w.clock.now(),
        },
      ]);
      const again = await call(w, 'DELETE', `${installationsPath()}/${installs.a}`, {
        token: company.owner.token,
      });
      expect(again.status).toBe(404);
      expect(again.body.code).toBe('installation.not_found');
    } finally {
      uninstallListeners.splice(uninstallListeners.indexOf(listener), 1);
    }
  });
});
