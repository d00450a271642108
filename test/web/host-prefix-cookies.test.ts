import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PASSWORD } from './page-client.ts';

/**
 * On https the session's cookies carry the `__Host-` prefix (issue 30 item 5): a sibling subdomain
 * can then neither set nor replace them. A browser signed in before the prefix came stays signed
 * in: its cookie is read once under the old name and written under the new.
 */
describe('session cookies on https', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill({ env: { WAYBILL_WEB_URL: 'https://waybill.example' } });
  });
  afterAll(async () => {
    await w?.close();
  });

  const setCookies = (headers: Record<string, unknown>): string[] => {
    const value = headers['set-cookie'];
    return value === undefined ? [] : Array.isArray(value) ? value : [String(value)];
  };
  const named = (cookies: string[], name: string) => cookies.find((c) => c.startsWith(`${name}=`));

  it('sign-in sets __Host- cookies: Secure, Path=/, no Domain', async () => {
    const person = await signUpPerson(w, 'Prefixed');
    const page = await w.app.inject({ method: 'GET', url: '/signin' });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const signedIn = await w.app.inject({
      method: 'POST',
      url: '/signin',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      payload: new URLSearchParams({
        _csrf: csrf,
        email: person.email,
        password: PASSWORD,
        return_to: '/dashboard',
      }).toString(),
    });
    expect(signedIn.statusCode).toBe(303);
    const cookies = setCookies(signedIn.headers);
    for (const name of ['__Host-waybill_session', '__Host-waybill_device']) {
      const set = named(cookies, name);
      expect(set, `${name} in ${cookies.join(' | ')}`).toBeDefined();
      expect(set).toMatch(/; Secure/i);
      expect(set).toMatch(/; Path=\/(;|$)/);
      expect(set).not.toMatch(/Domain=/i);
    }
    expect(named(cookies, 'waybill_session')).toBeUndefined();
    const session = named(cookies, '__Host-waybill_session')?.split(';')[0] as string;
    expect(
      (await w.app.inject({ method: 'GET', url: '/dashboard/companies/new', headers: { cookie: session } }))
        .statusCode,
    ).toBe(200);
  });

  it('a browser signed in under the old name stays signed in, and gets the new name', async () => {
    const person = await signUpPerson(w, 'Earlier');
    const first = await w.app.inject({
      method: 'GET',
      url: '/dashboard/companies/new',
      headers: { cookie: `waybill_session=${person.token}` },
    });
    expect(first.statusCode).toBe(200);
    const cookies = setCookies(first.headers);
    expect(named(cookies, '__Host-waybill_session')).toContain(person.token);
    expect(named(cookies, '__Host-waybill_session')).toMatch(/; Secure/i);
    // The old one is cleared.
    expect(named(cookies, 'waybill_session')).toMatch(/Expires=Thu, 01 Jan 1970|Max-Age=0/i);
    const next = await w.app.inject({
      method: 'GET',
      url: '/dashboard/companies/new',
      headers: { cookie: `__Host-waybill_session=${person.token}` },
    });
    expect(next.statusCode).toBe(200);
  });

  it('a plain-named cookie planted beside the prefixed one does not replace it', async () => {
    const person = await signUpPerson(w, 'Victim');
    const attacker = await signUpPerson(w, 'Attacker');
    // The mailbox page names whose it is.
    const page = await w.app.inject({
      method: 'GET',
      url: '/dev/mailbox',
      headers: { cookie: `waybill_session=${attacker.token}; __Host-waybill_session=${person.token}` },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(person.email);
    expect(page.body).not.toContain(attacker.email);
  });
});
