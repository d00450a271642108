import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient, signUpInBrowser } from './page-client.ts';

/** The name of the cookie that holds the CSRF secret (whatever it is called). */
function csrfCookieOf(client: PageClient): [string, string] {
  const entry = [...client.cookies].find(([name]) => name.toLowerCase().includes('csrf'));
  if (!entry) throw new Error('no CSRF cookie');
  return entry;
}

const shipmentForm = {
  recipient_name: 'Planted',
  currency: 'EUR',
  payment_mode: 'prepaid',
  weight_grams: '100',
  status: 'confirmed',
};

describe('the CSRF token is bound to the session', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it('a secret and token pair made in one session is refused in another', async () => {
    const { client: victim } = await signUpInBrowser(w, 'Victim');
    expect((await victim.post('/dashboard/companies', { name: 'Victim Ltd' })).status).toBe(303);
    const { client: attacker } = await signUpInBrowser(w, 'Attacker');
    expect((await attacker.post('/dashboard/companies', { name: 'Attacker Ltd' })).status).toBe(303);

    // The attacker takes a pair from their own session (a form page of theirs) ...
    await attacker.get('/dashboard/shipments/new');
    const [cookieName, attackerSecret] = csrfCookieOf(attacker);
    const attackerToken = attacker.csrf;
    // ... and plants the secret in the victim's browser (from a sibling subdomain), with a form
    // that carries the matching token.
    await victim.get('/dashboard/shipments/new');
    victim.cookies.set(cookieName, attackerSecret);
    const planted = await victim.request('POST', '/dashboard/shipments', {
      ...shipmentForm,
      _csrf: attackerToken,
    });
    expect(planted.status).toBe(403);
    expect((await victim.get('/dashboard/shipments')).text).not.toContain('Planted');

    // A pair made signed out (the sign-in page's) does not pass for a session either.
    const stranger = new PageClient(w);
    await stranger.get('/signin');
    const [, signedOutSecret] = csrfCookieOf(stranger);
    victim.cookies.set(cookieName, signedOutSecret);
    const signedOut = await victim.request('POST', '/dashboard/shipments', {
      ...shipmentForm,
      _csrf: stranger.csrf,
    });
    expect(signedOut.status).toBe(403);

    // The attacker's pair still works in the attacker's own session, and the victim's own pair
    // in the victim's: the refusals above were about the session.
    victim.cookies.delete(cookieName);
    await victim.get('/dashboard/shipments/new');
    expect((await victim.post('/dashboard/shipments', shipmentForm)).status).toBe(303);
    attacker.cookies.set(cookieName, attackerSecret);
    expect(
      (await attacker.request('POST', '/dashboard/shipments', { ...shipmentForm, _csrf: attackerToken }))
        .status,
    ).toBe(303);
  });

  it('a token made before signing in stops working once signed in', async () => {
    const { client, email } = await signUpInBrowser(w, 'Before');
    await client.post('/dashboard/companies', { name: 'Before Ltd' });
    // Signed out: the sign-in form's token.
    await client.post('/signout', {});
    await client.get('/signin');
    const beforeToken = client.csrf;
    const signedIn = await client.post('/signin', { email, password: 'correct horse battery' });
    expect(signedIn.status).toBe(303);
    const stale = await client.request('POST', '/dashboard/shipments', {
      ...shipmentForm,
      _csrf: beforeToken,
    });
    expect(stale.status).toBe(403);
  });
});

describe('with secure cookies', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_WEB_URL: 'https://waybill.example' } });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('keeps the CSRF secret in a __Host- cookie, which no other host can set', async () => {
    const page = await w.app.inject({ method: 'GET', url: '/signin' });
    const cookie = page.cookies.find((c) => c.name.toLowerCase().includes('csrf'));
    expect(cookie?.name.startsWith('__Host-')).toBe(true);
    expect(cookie).toMatchObject({ secure: true, path: '/' });
    expect(cookie?.domain).toBeUndefined();
  });
});
