import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type AppRecord,
  findAppByClientId,
  uninstall,
  upsertInstallation,
  verifyClientSecret,
} from '../../src/modules/apps/registry.ts';
import { createCompany, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { APP_BODY, install, registerApp } from './fixtures.ts';

let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

describe('apps registry (the interface of the OAuth endpoints)', () => {
  it('finds an app by client id with parsed lists, and verifies its secret', async () => {
    const developer = await signUpPerson(w, 'Dev');
    const registered = await registerApp(w, developer);
    const app = (await findAppByClientId(w.ctx, registered.client_id)) as AppRecord;
    expect(app).toMatchObject({
      id: registered.id,
      developer_id: developer.id,
      kind: 'confidential',
      status: 'private',
      redirect_uris: APP_BODY.redirect_uris,
      scopes: APP_BODY.scopes,
    });
    expect(verifyClientSecret(app, registered.client_secret)).toBe(true);
    expect(verifyClientSecret(app, `${registered.client_secret}x`)).toBe(false);
    expect(verifyClientSecret(app, '')).toBe(false);
    expect(await findAppByClientId(w.ctx, 'app_missing')).toBeNull();
    expect(await findAppByClientId(w.ctx, 'not-an-app')).toBeNull();

    const publicApp = (await findAppByClientId(
      w.ctx,
      (
        await registerApp(w, developer, { kind: 'public' })
      ).id,
    )) as AppRecord;
    expect(publicApp.client_secret_hash).toBeNull();
    expect(verifyClientSecret(publicApp, registered.client_secret)).toBe(false);
  });

  it('approving again for the same account updates the one installation; uninstall removes it', async () => {
    const company = await createCompany(w);
    const app = await registerApp(w, await signUpPerson(w, 'Dev'), { kind: 'public' });
    const base = { appId: app.id, tenantId: company.tenantId, userId: company.owner.id };
    const first = await install(w, { ...base, scopes: ['shipments:read'] });
    w.clock.advance(1000);
    const again = await w.ctx.db.transaction().execute((trx) =>
      upsertInstallation(w.ctx, trx, {
        ...base,
        customerAccountId: null,
        scopes: ['shipments:read', 'shipments:write'],
      }),
    );
    expect(again.id).toBe(first.id);
    const rows = await w.ctx.db
      .selectFrom('installations')
      .selectAll()
      .where('app_id', '=', app.id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.scopes).toEqual(['shipments:read', 'shipments:write']);
    expect(rows[0]?.updated_at.getTime()).toBeGreaterThan(rows[0]?.created_at.getTime() ?? Infinity);

    await expect(uninstall(w.ctx, company.tenantId, 'inst_unknown')).rejects.toMatchObject({
      code: 'installation.not_found',
    });
    const other = await createCompany(w);
    await expect(uninstall(w.ctx, other.tenantId, first.id)).rejects.toMatchObject({
      code: 'installation.not_found',
    });
    await uninstall(w.ctx, company.tenantId, first.id);
    expect(
      await w.ctx.db.selectFrom('installations').select('id').where('id', '=', first.id).execute(),
    ).toHaveLength(0);
  });
});
