import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../../src/modules/accounts/access.ts';
import { type CompanyFixture, call, createCompany } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { createEndpoint, type Receiver, startReceiver } from './support.ts';

/**
 * App access tokens come from the OAuth module; here a resolver stands in for it, answering the
 * principal an app token carries (its installation, the approving person, the granted scopes).
 */
function useAppTokens(w: TestWaybill, company: CompanyFixture): void {
  w.ctx.tokenResolvers.set('atk_live_', async (_ctx, secret): Promise<Principal | null> => {
    const installationId = /^atk_live_(inst_\w+)$/.exec(secret)?.[1];
    if (!installationId) return null;
    return {
      kind: 'app_token',
      tokenId: `tok_${installationId}`,
      appId: 'app_test',
      resource: 'v1',
      access: {
        tenantId: company.tenantId,
        customerAccountId: null,
        livemode: true,
        scopes: new Set(['webhooks:write']),
        installationId,
        userId: company.owner.id,
        actor: `tok_${installationId}`,
      },
    };
  });
}

describe('endpoints of app installations', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;
  const appOne = 'atk_live_inst_one';
  const appTwo = 'atk_live_inst_two';

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    company = await createCompany(w);
    useAppTokens(w, company);
    // The installations the tokens stand for (the OAuth module makes these when a company approves).
    const now = w.clock.now();
    for (const name of ['one', 'two']) {
      await w.ctx.db
        .insertInto('apps')
        .values({
          id: `app_${name}`,
          developer_id: company.owner.id,
          name: `App ${name}`,
          description: 'An app of the test',
          homepage_url: null,
          privacy_url: null,
          support_url: null,
          redirect_uris: JSON.stringify(['https://app.example.com/callback']),
          scopes: JSON.stringify(['webhooks:write']),
          kind: 'confidential',
          client_secret_hash: null,
          events_url: null,
          events_secret_sealed: w.ctx.secrets.seal('whsec_x'),
          events_previous_secret_sealed: null,
          events_previous_secret_expires_at: null,
          status: 'published',
          created_at: now,
          updated_at: now,
        })
        .execute();
      await w.ctx.db
        .insertInto('installations')
        .values({
          id: `inst_${name}`,
          app_id: `app_${name}`,
          tenant_id: company.tenantId,
          customer_account_id: null,
          user_id: company.owner.id,
          scopes: JSON.stringify(['webhooks:write']),
          approved_at: now,
          created_at: now,
          updated_at: now,
        })
        .execute();
    }
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  it('an app token makes endpoints of its installation and sees only those', async () => {
    const ours = await createEndpoint(w, appOne, { url: receiver.url });
    expect(ours).toMatchObject({ installation_id: 'inst_one', customer_account_id: null, livemode: true });
    const companys = await createEndpoint(w, company.liveToken, { url: receiver.url });

    const listed = await call(w, 'GET', '/v1/webhook-endpoints', { token: appOne });
    expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual([ours.id]);
    for (const path of ['', '/secret', '/deliveries']) {
      expect(
        (await call(w, 'GET', `/v1/webhook-endpoints/${companys.id}${path}`, { token: appOne })).status,
      ).toBe(404);
      expect(
        (await call(w, 'GET', `/v1/webhook-endpoints/${ours.id}${path}`, { token: appTwo })).status,
      ).toBe(404);
    }
    // The company sees every endpoint of its own, the installation's included.
    const all = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    expect(all.body.data.map((e: { id: string }) => e.id).sort()).toEqual([ours.id, companys.id].sort());
  });

  it('counts 5 per installation, apart from the company and other installations', async () => {
    for (let i = 0; i < 4; i += 1) await createEndpoint(w, appOne, { url: receiver.url });
    const sixth = await call(w, 'POST', '/v1/webhook-endpoints', {
      token: appOne,
      body: { url: receiver.url, event_types: ['shipment.created'] },
    });
    expect(sixth.status).toBe(409);
    expect(sixth.body.code).toBe('webhook_endpoint.limit_reached');
    await createEndpoint(w, appTwo, { url: receiver.url });
    await createEndpoint(w, company.liveToken, { url: receiver.url });
  });
});
