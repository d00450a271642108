import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeUnusedRegistrations } from '../../src/modules/oauth/registration.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/** RFC 7591 registration of public agent clients: what is accepted, refused, limited and removed. */
describe('dynamic client registration', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  const register = (body: unknown) =>
    fetch(`${w.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const count = async () =>
    Number(
      (
        await w.ctx.db
          .selectFrom('agent_clients')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('refuses bad metadata with the RFC 7591 error and stores nothing', async () => {
    const cases: [unknown, string][] = [
      [{ redirect_uris: ['http://agent.example/callback'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://127.0.0.1:9/callback'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://agent.example/cb#x'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: [] }, 'invalid_redirect_uri'],
      [
        { redirect_uris: ['https://agent.example/cb'], token_endpoint_auth_method: 'client_secret_basic' },
        'invalid_client_metadata',
      ],
      [{ redirect_uris: ['https://agent.example/cb'], scope: 'admin' }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://agent.example/cb'], client_name: 42 }, 'invalid_client_metadata'],
      ['not json', 'invalid_client_metadata'],
    ];
    for (const [body, error] of cases) {
      const response = await register(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(((await response.json()) as { error: string }).error).toBe(error);
    }
    expect(await count()).toBe(0);
  });

  it('registers a native client on loopback and a web client on https; 10 an hour per address', async () => {
    const native = await register({
      client_name: 'Terminal Agent',
      redirect_uris: ['http://127.0.0.1:33418/callback', 'com.example.agent:/oauth'],
      application_type: 'native',
      token_endpoint_auth_method: 'none',
    });
    expect(native.status).toBe(201);
    const body = (await native.json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      client_name: 'Terminal Agent',
      token_endpoint_auth_method: 'none',
      redirect_uris: ['http://127.0.0.1:33418/callback', 'com.example.agent:/oauth'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    expect(body.client_id).toMatch(/^app_/);
    expect(body.client_id_issued_at).toBe(Math.floor(w.clock.now().getTime() / 1000));
    for (let i = 1; i < 10; i++)
      expect((await register({ redirect_uris: ['https://a.example/cb'] })).status).toBe(201);
    const limited = await register({ redirect_uris: ['https://a.example/cb'] });
    expect(limited.status).toBe(429);
    expect(await count()).toBe(10);
    w.clock.advance(61 * 60_000);
    expect((await register({ redirect_uris: ['https://a.example/cb'] })).status).toBe(201);
  });

  it('removes registrations no person approved within 24 h', async () => {
    const before = await count();
    expect(before).toBeGreaterThan(0);
    w.clock.advance(23 * 3600_000);
    expect(await purgeUnusedRegistrations(w.ctx)).toBe(before - 1);
    w.clock.advance(2 * 3600_000);
    expect(await purgeUnusedRegistrations(w.ctx)).toBe(1);
    expect(await count()).toBe(0);
  });
});
