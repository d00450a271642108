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
      [{ redirect_uris: ['http://127.0.0.1:9/callback'], application_type: 'web' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://127.0.0.1:9/cb', 'https://a.example/cb#x'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://agent.example/cb#x'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: [] }, 'invalid_redirect_uri'],
      [
        { redirect_uris: ['https://agent.example/cb'], token_endpoint_auth_method: 'private_key_jwt' },
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

  it('takes what v1-line SDK clients send: no application_type on loopback, a secret method, empty strings', async () => {
    w.clock.advance(61 * 60_000);
    // What @modelcontextprotocol/sdk 1.x registers: no application_type, client_secret_post asked.
    const v1 = await register({
      client_name: 'Claude Desktop (SDK 1.x)',
      redirect_uris: ['http://localhost:6274/oauth/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
      client_uri: '',
      logo_uri: '',
      scope: '',
    });
    expect(v1.status).toBe(201);
    const body = (await v1.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ application_type: 'native', token_endpoint_auth_method: 'none' });
    expect(body).not.toHaveProperty('client_secret');
    expect(body).not.toHaveProperty('client_uri');
    const scheme = await register({
      redirect_uris: ['com.example.agent:/oauth'],
      token_endpoint_auth_method: 'client_secret_basic',
    });
    expect(scheme.status).toBe(201);
    expect(await scheme.json()).toMatchObject({
      application_type: 'native',
      token_endpoint_auth_method: 'none',
    });
    // An https redirect keeps a client web; one loopback redirect beside it is then refused.
    const web = await register({ redirect_uris: ['https://agent.example/cb'] });
    expect(await web.json()).toMatchObject({ application_type: 'web' });
    const mixed = await register({ redirect_uris: ['https://agent.example/cb', 'http://127.0.0.1:9/cb'] });
    expect(mixed.status).toBe(400);
    expect(await mixed.json()).toMatchObject({ error: 'invalid_redirect_uri' });
  });

  it('refuses names with control, bidirectional or invisible characters (I3)', async () => {
    w.clock.advance(61 * 60_000);
    const before = await count();
    for (const mark of [
      '\u202e',
      '\u202a',
      '\u2066',
      '\u2069',
      '\u200e',
      '\u200f',
      '\u061c',
      '\u0085',
      '\u0007',
      // Invisible: zero-width space, non-joiner, joiner, word joiner, BOM, soft hyphen, a tag
      // character, the Hangul filler and the Braille blank.
      '\u200b',
      '\u200c',
      '\u200d',
      '\u2060',
      '\ufeff',
      '\u00ad',
      '\u{e0041}',
      '\u3164',
      '\u2800',
    ]) {
      const response = await register({
        client_name: `Trusted${mark}tnegA`,
        redirect_uris: ['https://agent.example/cb'],
      });
      expect(response.status, JSON.stringify(mark)).toBe(400);
      expect(await response.json()).toMatchObject({ error: 'invalid_client_metadata' });
    }
    expect(await count()).toBe(before);
    expect(
      (await register({ client_name: 'Café Agent — ✓', redirect_uris: ['https://agent.example/cb'] })).status,
    ).toBe(201);
  });

  it('of 30 parallel registrations from one address, exactly 10 pass', async () => {
    w.clock.advance(61 * 60_000);
    const answers = await Promise.all(
      Array.from({ length: 30 }, () => register({ redirect_uris: ['https://a.example/cb'] })),
    );
    const statuses = answers.map((a) => a.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(20);
    const limited = answers.find((a) => a.status === 429);
    expect(Number(limited?.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts an IPv6 /64 as one address', async () => {
    w.clock.advance(61 * 60_000);
    const from = (address: string) =>
      w.app.inject({
        method: 'POST',
        url: '/oauth/register',
        remoteAddress: address,
        payload: { redirect_uris: ['https://a.example/cb'] },
      });
    for (let i = 1; i <= 10; i++)
      expect((await from(`2001:db8:7:9::${i.toString(16)}`)).statusCode).toBe(201);
    // Another address of the same /64: the same key, refused; another /64: its own places.
    expect((await from('2001:db8:7:9:ffff:1:2:3')).statusCode).toBe(429);
    expect((await from('2001:db8:7:a::1')).statusCode).toBe(201);
    const keys = await w.ctx.db
      .selectFrom('agent_clients')
      .select('registered_from')
      .where('registered_from', 'like', '2001:db8:%')
      .execute();
    expect(new Set(keys.map((k) => k.registered_from))).toEqual(
      new Set(['2001:db8:7:9::/64', '2001:db8:7:a::/64']),
    );
  });

  it('removes registrations no person approved within 24 h', async () => {
    w.clock.advance(25 * 3600_000);
    await purgeUnusedRegistrations(w.ctx);
    expect(await count()).toBe(0);
    expect((await register({ redirect_uris: ['https://a.example/cb'] })).status).toBe(201);
    w.clock.advance(23 * 3600_000);
    expect((await register({ redirect_uris: ['https://a.example/cb'] })).status).toBe(201);
    w.clock.advance(2 * 3600_000);
    expect(await purgeUnusedRegistrations(w.ctx)).toBe(1);
    expect(await count()).toBe(1);
  });
});
