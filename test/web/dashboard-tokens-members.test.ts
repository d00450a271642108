import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { signInInBrowser } from './page-client.ts';

describe('dashboard API tokens and members', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('creates a token shown once, which works until it is revoked', async () => {
    const company = await createCompany(w, 'Token Co');
    const client = await signInInBrowser(w, company.owner.email);
    const form = await client.get('/dashboard/api-tokens');
    expect(form.text).toContain('value="webhooks:write"');
    const created = await client.post('/dashboard/api-tokens', {
      name: 'Warehouse',
      mode: 'test',
      scopes: ['shipments:read', 'shipments:write'],
    });
    expect(created.status).toBe(303);
    expect(created.location).toBe('/dashboard/api-tokens');
    const shown = await client.follow(created);
    expect(shown.text).toContain('shown only once');
    const secret = /value="(sk_test_\w+)" readonly/.exec(shown.text)?.[1] ?? '';
    expect(secret).not.toBe('');
    // A reload shows the list, not the secret again, and makes no second token.
    const reloaded = await client.get('/dashboard/api-tokens');
    expect(reloaded.text).not.toContain(secret);
    expect((await call(w, 'GET', '/v1/shipments', { token: secret })).status).toBe(200);
    const list = await client.get('/dashboard/api-tokens');
    expect(list.text).toContain('Warehouse');
    expect(list.text).not.toContain(secret);
    const tokenId =
      /Warehouse<br>[^\n]*?href="\/dashboard\/api-tokens\/(tok_\w+)\/revoke"/.exec(list.text)?.[1] ?? '';
    // The first click asks once more and changes nothing.
    const question = await client.get(`/dashboard/api-tokens/${tokenId}/revoke`);
    expect(question.text).toContain('Revoke the token Warehouse?');
    expect((await call(w, 'GET', '/v1/shipments', { token: secret })).status).toBe(200);
    const revoked = await client.follow(
      await client.post(`/dashboard/api-tokens/${tokenId}/revoke`, { confirmed: 'yes' }),
    );
    expect(revoked.text).toContain('Token revoked');
    expect((await call(w, 'GET', '/v1/shipments', { token: secret })).status).toBe(401);
  });

  it('refuses scopes beyond the role, and no scopes at all', async () => {
    const company = await createCompany(w, 'Scoped Co');
    const client = await signInInBrowser(w, company.owner.email);
    await client.get('/dashboard/api-tokens');
    const none = await client.post('/dashboard/api-tokens', { name: 'Empty', mode: 'live' });
    // Refused: 303 back to the form, the error beside the scopes (test/web/form-errors-browser.test.ts).
    expect(none.status).toBe(303);
    expect(none.location).toBe('/dashboard/api-tokens');
    expect((await client.follow(none)).text).toContain('Choose at least one scope');
    const bogus = await client.post('/dashboard/api-tokens', {
      name: 'Bogus',
      mode: 'live',
      scopes: 'admin:all',
    });
    expect(bogus.status).toBe(303);
    const tokens = await w.ctx.db
      .selectFrom('api_tokens')
      .select('name')
      .where('tenant_id', '=', company.tenantId)
      .execute();
    expect(tokens.map((t) => t.name).sort()).toEqual(['test token', 'test token']);
  });

  it('hides token pages from a member who does not manage integrations', async () => {
    const company = await createCompany(w, 'Staff Co');
    const member = await signUpPerson(w, 'Staff');
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: member.email, role: 'member' },
    });
    const client = await signInInBrowser(w, member.email);
    const shipments = await client.get('/dashboard/shipments');
    expect(shipments.text).not.toContain('href="/dashboard/api-tokens"');
    const page = await client.get('/dashboard/api-tokens');
    expect(page.status).toBe(403);
    expect(page.text).toContain('Not allowed');
    const members = await client.get('/dashboard/members');
    expect(members.text).not.toContain('Add member');
  });

  it('adds and removes members and merchant accounts', async () => {
    const company = await createCompany(w, 'Team Co');
    const merchant = await signUpPerson(w, 'Merchant Mia');
    const client = await signInInBrowser(w, company.owner.email);
    await client.get('/dashboard/members');
    const account = await client.follow(
      await client.post('/dashboard/merchant-accounts', { name: 'Shop <B>' }),
    );
    expect(account.text).toContain('Merchant account Shop &lt;B&gt; created.');
    const accountId = /<code>(acct_\w+)<\/code>/.exec(account.text)?.[1] ?? '';
    const unbound = await client.post('/dashboard/members', {
      email: merchant.email,
      role: 'merchant_admin',
      customer_account_id: '',
    });
    expect(unbound.status).toBe(400);
    const added = await client.follow(
      await client.post('/dashboard/members', {
        email: merchant.email,
        role: 'merchant_admin',
        customer_account_id: accountId,
      }),
    );
    expect(added.text).toContain('Merchant Mia is now merchant admin.');
    const unknown = await client.post('/dashboard/members', { email: 'nobody@example.test', role: 'member' });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain('No person has signed up with that e-mail');
    // The merchant admin's view is fixed to their account and they may make tokens for it.
    const mia = await signInInBrowser(w, merchant.email);
    const tokens = await mia.get('/dashboard/api-tokens');
    expect(tokens.status).toBe(200);
    expect(tokens.text).not.toContain('name="account"');
    // A POST without the question's answer is sent to the question, and removes nobody.
    const unasked = await client.post(`/dashboard/members/${merchant.id}/remove`, {});
    expect(unasked.location).toBe(`/dashboard/members/${merchant.id}/remove`);
    expect((await mia.get('/dashboard/api-tokens')).status).toBe(200);
    const question = await client.follow(unasked);
    expect(question.text).toContain('Remove Merchant Mia from');
    const lastOwner = await client.post(`/dashboard/members/${company.owner.id}/remove`, {
      confirmed: 'yes',
    });
    expect(lastOwner.status).toBe(409);
    const removed = await client.follow(
      await client.post(`/dashboard/members/${merchant.id}/remove`, { confirmed: 'yes' }),
    );
    expect(removed.text).toContain('Merchant Mia was removed.');
    expect((await mia.get('/dashboard/shipments')).location).toBe('/dashboard/companies/new');
  });
});
