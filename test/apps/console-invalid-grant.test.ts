import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { registerApp } from './fixtures.ts';

/**
 * The console's invalid_grant figure (issue 30 item 5): a public app's client id is all its token
 * requests carry, so anyone can send refused ones in its name. They are counted apart from the
 * refusals of requests that proved the client with its secret.
 */
describe("the developer console's refused token requests", () => {
  let w: TestWaybill;
  let developer: Person;
  beforeAll(async () => {
    w = await startWaybill();
    developer = await signUpPerson(w, 'Console Developer');
  });
  afterAll(async () => {
    await w?.close();
  });

  const refresh = (form: Record<string, string>, authorization?: string) =>
    w.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(authorization ? { authorization } : {}),
      },
      payload: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: 'atr_madeup',
        ...form,
      }).toString(),
    });
  const tokens = async (appId: string) =>
    (await call(w, 'GET', `/v1/developer/apps/${appId}/stats?window=24h`, { token: developer.token })).body
      .tokens;

  it("a stranger naming a public app's client id does not raise its invalid_grant count", async () => {
    const app = await registerApp(w, developer, { name: 'Public One', kind: 'public' });
    for (let i = 0; i < 3; i++) {
      const refused = await refresh({ client_id: app.client_id });
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toBe('invalid_grant');
    }
    expect(await tokens(app.id)).toMatchObject({ invalid_grant: 0, invalid_grant_anonymous: 3 });
  });

  it("a confidential app's refusals after its secret count as invalid_grant", async () => {
    const app = await registerApp(w, developer, { name: 'Confidential One' });
    const basic = `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}`;
    const refused = await refresh({}, basic);
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error).toBe('invalid_grant');
    // Without its secret, nothing gets that far: invalid_client, not counted.
    expect((await refresh({ client_id: app.client_id })).json().error).toBe('invalid_client');
    expect(await tokens(app.id)).toMatchObject({ invalid_grant: 1, invalid_grant_anonymous: 0 });
  });
});
