import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

/**
 * Per-address limits count an IPv6 /64 as one address (issue 30 item 5): one subscriber is given a
 * whole /64 and picks any of its addresses, so counting each address would be no limit at all.
 */
describe('per-address rate limits and IPv6', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_OAUTH_RATE_LIMIT: '3' } });
  });
  afterAll(async () => {
    await w?.close();
  });

  const signUp = (remoteAddress: string, n: number) =>
    w.app.inject({
      method: 'POST',
      url: '/v1/auth/signup',
      remoteAddress,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({
        email: `six-${n}-${Date.now()}@example.test`,
        password: 'long enough pw',
        name: 'Six',
      }),
    });

  it('sign-up: twenty a minute from one /64, whichever of its addresses', async () => {
    for (let i = 1; i <= 20; i++)
      expect((await signUp(`2001:db8:a:b::${i.toString(16)}`, i)).statusCode).toBe(201);
    const refused = await signUp('2001:db8:a:b:ffff:ffff:ffff:ffff', 21);
    expect(refused.statusCode).toBe(429);
    // The next /64 is someone else.
    expect((await signUp('2001:db8:a:c::1', 22)).statusCode).toBe(201);
  });

  it('the OAuth token endpoint: its per-address limit is per /64', async () => {
    const token = (remoteAddress: string, client: string) =>
      w.app.inject({
        method: 'POST',
        url: '/oauth/token',
        remoteAddress,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=refresh_token&refresh_token=atr_nothing&client_id=${client}`,
      });
    // Another client each time: only the per-address limit can count them together.
    for (let i = 1; i <= 3; i++)
      expect((await token(`2001:db8:c:d::${i}`, `app_${i}`)).statusCode).not.toBe(429);
    expect((await token('2001:db8:c:d::99', 'app_99')).statusCode).toBe(429);
    expect((await token('2001:db8:c:e::1', 'app_100')).statusCode).not.toBe(429);
  });
});
