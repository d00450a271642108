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
