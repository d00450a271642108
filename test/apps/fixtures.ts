import { hashSecret, newId, newSecret } from '../../src/lib/ids.ts';
import type { Scope } from '../../src/modules/accounts/roles.ts';
import { upsertInstallation } from '../../src/modules/apps/registry.ts';
import { call, type Json, type Person } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';

export const APP_BODY = {
  name: 'Carrier Sync',
  description: 'Keeps your carrier accounts in step with Waybill',
  homepage_url: 'https://carrier-sync.example',
  privacy_url: 'https://carrier-sync.example/privacy',
  support_url: 'https://carrier-sync.example/support',
  redirect_uris: ['https://carrier-sync.example/oauth/callback', 'http://localhost:8080/callback'],
  scopes: ['shipments:read', 'webhooks:write'],
  kind: 'confidential',
};

export async function registerApp(w: TestWaybill, developer: Person, body: Record<string, unknown> = {}) {
  const response = await call(w, 'POST', '/v1/developer/apps', {
    token: developer.token,
    body: { ...APP_BODY, ...body },
  });
  if (response.status !== 201) throw new Error(`app registration failed: ${response.text}`);
  return response.body as Json;
}

/** An installation as the consent page would leave it, written through the registry. */
export async function install(
  w: TestWaybill,
  input: {
    appId: string;
    tenantId: string;
    userId: string;
    customerAccountId?: string | null;
    scopes?: Scope[];
  },
) {
  return w.ctx.db.transaction().execute((trx) =>
    upsertInstallation(w.ctx, trx, {
      customerAccountId: null,
      scopes: ['shipments:read', 'webhooks:write'],
      ...input,
    }),
  );
}

/** An access and a refresh token row of an installation, as the token endpoint would issue them. */
export async function issueAppTokens(
  w: TestWaybill,
  input: { appId: string; installationId: string; userId: string; scopes?: Scope[] },
): Promise<{ accessToken: string }> {
  const accessToken = newSecret('atk_live_');
  const now = w.clock.now();
  const { tenant_id } = await w.ctx.db
    .selectFrom('installations')
    .select('tenant_id')
    .where('id', '=', input.installationId)
    .executeTakeFirstOrThrow();
  const base = {
    app_id: input.appId,
    installation_id: input.installationId,
    tenant_id,
    user_id: input.userId,
    scopes: JSON.stringify(input.scopes ?? ['shipments:read', 'webhooks:write']),
    created_at: now,
    used_at: null,
    revoked_at: null,
  };
  await w.ctx.db
    .insertInto('oauth_tokens')
    .values([
      {
        ...base,
        id: newId('att'),
        token_hash: hashSecret(accessToken),
        kind: 'access',
        expires_at: new Date(now.getTime() + 3600_000),
      },
      {
        ...base,
        id: newId('att'),
        token_hash: hashSecret(newSecret('atr_')),
        kind: 'refresh',
        expires_at: new Date(now.getTime() + 30 * 86400_000),
      },
    ])
    .execute();
  return { accessToken };
}
