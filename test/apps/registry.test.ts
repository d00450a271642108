import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, newId, newSecret } from '../../src/lib/ids.ts';
import {
  findAppByClientId,
  uninstall,
  upsertInstallation,
  verifyClientSecret,
} from '../../src/modules/apps/registry.ts';
import { createCompany, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

async function insertApp(developerId: string, secret: string | null) {
  const now = w.clock.now();
  const id = newId('app');
  await w.ctx.db
    .insertInto('apps')
    .values({
      id,
      developer_id: developerId,
      name: 'Registry App',
      description: 'For the registry tests',
      homepage_url: null,
      privacy_url: null,
      support_url: null,
      redirect_uris: JSON.stringify(['https://app.example/cb']),
      scopes: JSON.stringify(['shipments:read']),
      kind: secret ? 'confidential' : 'public',
      client_secret_hash: secret ? hashSecret(secret) : null,
      events_url: null,
      events_secret_sealed: w.ctx.secrets.seal('whsec_x'),
      events_previous_secret_sealed: null,
      events_previous_secret_expires_at: null,
      status: 'private',
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

describe('apps registry (the interface of the OAuth endpoints)', () => {
  it('finds an app by client id with parsed lists, and verifies its secret', async () => {
    const developer = await signUpPerson(w, 'Dev');
    const secret = newSecret('aps_');
    const id = await insertApp(developer.id, secret);
    const app = await findAppByClientId(w.ctx, id);
    expect(app).toMatchObject({ id, kind: 'confidential', redirect_uris: ['https://app.example/cb'] });
    expect(app?.scopes).toEqual(['shipments:read']);
    expect(verifyClientSecret(app as never, secret)).toBe(true);
    expect(verifyClientSecret(app as never, `${secret}x`)).toBe(false);
    expect(verifyClientSecret(app as never, '')).toBe(false);
    expect(await findAppByClientId(w.ctx, 'app_missing')).toBeNull();
    expect(await findAppByClientId(w.ctx, 'not-an-app')).toBeNull();

    const publicApp = await findAppByClientId(w.ctx, await insertApp(developer.id, null));
    expect(verifyClientSecret(publicApp as never, secret)).toBe(false);
  });

  it('approving again for the same account updates the one installation; uninstall removes it', async () => {
    const developer = await signUpPerson(w, 'Dev');
    const company = await createCompany(w);
    const appId = await insertApp(developer.id, null);
    const base = { appId, tenantId: company.tenantId, customerAccountId: null, userId: company.owner.id };
    const first = await w.ctx.db
      .transaction()
      .execute((trx) => upsertInstallation(w.ctx, trx, { ...base, scopes: ['shipments:read'] }));
    const again = await w.ctx.db
      .transaction()
      .execute((trx) =>
        upsertInstallation(w.ctx, trx, { ...base, scopes: ['shipments:read', 'shipments:write'] }),
      );
    expect(again.id).toBe(first.id);
    const rows = await w.ctx.db.selectFrom('installations').selectAll().where('app_id', '=', appId).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.scopes).toEqual(['shipments:read', 'shipments:write']);

    await expect(uninstall(w.ctx, company.tenantId, 'inst_unknown')).rejects.toMatchObject({
      code: 'installation.not_found',
    });
    await uninstall(w.ctx, company.tenantId, first.id);
    expect(
      await w.ctx.db.selectFrom('installations').select('id').where('id', '=', first.id).execute(),
    ).toHaveLength(0);
  });
});
