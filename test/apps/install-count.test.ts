import { afterAll, beforeAll, expect, it } from 'vitest';
import { uninstall, upsertInstallation } from '../../src/modules/apps/registry.ts';
import { revokeAgentConnection } from '../../src/modules/mcp/connections.ts';
import { createCompany } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { install, issueAppTokens, registerApp } from './fixtures.ts';

/**
 * The store's install count follows the apps' /v1 grants, kept by the statements that add and remove
 * installations since no trigger does it (decision 0071); removing an installation removes its
 * codes and tokens, which no foreign key cascades to any more.
 */
let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

async function installCount(appId: string): Promise<number | undefined> {
  const row = await w.ctx.db
    .selectFrom('app_store_stats')
    .select('install_count')
    .where('app_id', '=', appId)
    .executeTakeFirst();
  return row?.install_count;
}

async function grantsOf(installationId: string): Promise<{ codes: number; tokens: number }> {
  const codes = await w.ctx.db
    .selectFrom('oauth_codes')
    .select('code_hash')
    .where('installation_id', '=', installationId)
    .execute();
  const tokens = await w.ctx.db
    .selectFrom('oauth_tokens')
    .select('id')
    .where('installation_id', '=', installationId)
    .execute();
  return { codes: codes.length, tokens: tokens.length };
}

it('counts each /v1 installation once, not an approval again nor an /mcp grant, and uncounts its removal', async () => {
  const one = await createCompany(w);
  const two = await createCompany(w);
  const app = await registerApp(w, one.owner);
  const appId = app.id as string;
  const first = await install(w, { appId, tenantId: one.tenantId, userId: one.owner.id });
  expect(await installCount(appId)).toBe(1);
  // The same company approving again updates its one grant.
  await install(w, { appId, tenantId: one.tenantId, userId: one.owner.id, scopes: ['shipments:read'] });
  expect(await installCount(appId)).toBe(1);
  const second = await install(w, { appId, tenantId: two.tenantId, userId: two.owner.id });
  expect(await installCount(appId)).toBe(2);
  const connection = await w.ctx.db.transaction().execute((trx) =>
    upsertInstallation(w.ctx, trx, {
      appId,
      tenantId: one.tenantId,
      customerAccountId: null,
      userId: one.owner.id,
      scopes: ['shipments:read'],
      livemode: false,
      resource: 'mcp',
    }),
  );
  expect(await installCount(appId)).toBe(2);

  await issueAppTokens(w, { appId, installationId: first.id, userId: one.owner.id });
  await issueAppTokens(w, { appId, installationId: connection.id, userId: one.owner.id });
  // Revoking the /mcp grant takes its tokens and leaves the count of /v1 installations alone.
  await revokeAgentConnection(w.ctx, one.owner.id, one.tenantId, connection.id);
  expect(await grantsOf(connection.id)).toEqual({ codes: 0, tokens: 0 });
  expect(await installCount(appId)).toBe(2);
  await uninstall(w.ctx, one.tenantId, first.id);
  expect(await installCount(appId)).toBe(1);
  expect(await grantsOf(first.id)).toEqual({ codes: 0, tokens: 0 });
  await uninstall(w.ctx, two.tenantId, second.id);
  expect(await installCount(appId)).toBe(0);
  // Installing again counts again.
  await install(w, { appId, tenantId: one.tenantId, userId: one.owner.id });
  expect(await installCount(appId)).toBe(1);
});
