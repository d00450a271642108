import { afterAll, beforeAll, expect, it } from 'vitest';
import { findAppByClientId, verifyClientSecret } from '../../src/modules/apps/registry.ts';
import { DEMO_PEOPLE, seedDemo } from '../../src/seed.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

it("seeds the demo developer's confidential app and prints its client id and secret", async () => {
  const seed = await seedDemo(w.ctx);
  const text = seed?.lines.join('\n') ?? '';
  const clientId = /client id\s+(app_\S+)/.exec(text)?.[1] as string;
  const secret = /client secret\s+(aps_\S+)/.exec(text)?.[1] as string;
  const app = await findAppByClientId(w.ctx, clientId);
  expect(app).toMatchObject({
    name: 'Demo Carrier Sync',
    kind: 'confidential',
    redirect_uris: ['http://localhost:8080/callback'],
  });
  expect(verifyClientSecret(app as never, secret)).toBe(true);
  const developer = await w.ctx.db
    .selectFrom('users')
    .select('id')
    .where('email', '=', DEMO_PEOPLE.developer.email)
    .executeTakeFirstOrThrow();
  expect(app?.developer_id).toBe(developer.id);
});

it("gives the demo developer's app a living console: installs, an uninstall with its reason, calls and errors", async () => {
  const developer = await w.ctx.db
    .selectFrom('users')
    .select('id')
    .where('email', '=', DEMO_PEOPLE.developer.email)
    .executeTakeFirstOrThrow();
  const app = await w.ctx.db
    .selectFrom('apps')
    .select('id')
    .where('developer_id', '=', developer.id)
    .executeTakeFirstOrThrow();
  const { appStats, listAppInstallations } = await import('../../src/modules/console/service.ts');
  const stats = await appStats(w.ctx, developer.id, app.id, '30d');
  expect(stats.installations).toEqual({ active: 2, installed: 3, uninstalled: 1 });
  expect(stats.api.requests).toBeGreaterThan(100);
  expect(stats.api.top_errors[0]?.code).toBe('auth.insufficient_scope');
  expect(stats.tokens.invalid_grant).toBeGreaterThan(0);
  const installations = await listAppInstallations(w.ctx, developer.id, app.id, {});
  expect(installations.data.find((i) => i.status === 'uninstalled')?.uninstall_reason).toBe(
    'Missing features: We needed label printing for returns',
  );
});
