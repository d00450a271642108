import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/lib/clock.ts';
import {
  SIGN_IN_FAILURES_PER_WINDOW,
  SIGN_IN_WINDOW_MS,
} from '../../src/modules/accounts/sign-in-throttle.ts';
import { signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

const PASSWORD = 'correct horse battery';

// Every sign-in here runs the slow password hash, the failures too (on purpose): dozens per test.
describe('the per-account sign-in limit, across addresses and routes', { timeout: 120_000 }, () => {
  let w: TestWaybill;
  let addressCounter = 0;
  /** A new client address each time, so that the per-address limit never comes into play. */
  const nextAddress = () => `10.${Math.floor(++addressCounter / 250)}.${addressCounter % 250}.1`;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  async function apiSignIn(email: string, password: string, remoteAddress = nextAddress()) {
    const response = await w.app.inject({
      method: 'POST',
      url: '/v1/auth/sessions',
      remoteAddress,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email, password }),
    });
    return { status: response.statusCode, body: response.json() as { code?: string; token?: string } };
  }

  async function formSignIn(email: string, password: string, remoteAddress = nextAddress()) {
    const page = await w.app.inject({ method: 'GET', url: '/signin', remoteAddress });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
    const response = await w.app.inject({
      method: 'POST',
      url: '/signin',
      remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      payload: new URLSearchParams({ _csrf: csrf, email, password, return_to: '/dashboard' }).toString(),
    });
    const signedIn = response.cookies.some((c) => c.name === 'waybill_session' && c.value !== '');
    return { status: response.statusCode, signedIn };
  }

  /** The limit's worth of failures, each from another address, half through the API, half the form. */
  async function failFromEverywhere(email: string) {
    for (let i = 0; i < SIGN_IN_FAILURES_PER_WINDOW; i++) {
      if (i % 2 === 0) expect((await apiSignIn(email, `wrong guess ${i}`)).status).toBe(401);
      else expect((await formSignIn(email, `wrong guess ${i}`)).status).toBe(401);
    }
  }

  it('after the limit of failures, the account refuses every sign-in, the right password included', async () => {
    const person = await signUpPerson(w, 'Targeted');
    const bystander = await signUpPerson(w, 'Bystander');
    await failFromEverywhere(person.email);

    const api = await apiSignIn(person.email, PASSWORD);
    expect(api.status).toBe(429);
    expect(api.body.code).toBe('rate_limited');
    expect(api.body.token).toBeUndefined();
    const form = await formSignIn(person.email, PASSWORD);
    expect(form.status).toBe(429);
    expect(form.signedIn).toBe(false);
    // The e-mail is the same account whatever its case or spaces.
    expect((await apiSignIn(` ${person.email.toUpperCase()} `, PASSWORD)).status).toBe(429);

    // Another account signs in from the same kind of addresses.
    expect((await apiSignIn(bystander.email, PASSWORD)).status).toBe(201);

    // When the window that the first failure opened ends, the right password works again.
    w.clock.advance(SIGN_IN_WINDOW_MS - MINUTE);
    expect((await apiSignIn(person.email, PASSWORD)).status).toBe(429);
    w.clock.advance(MINUTE);
    expect((await apiSignIn(person.email, PASSWORD)).status).toBe(201);
    expect((await formSignIn(person.email, PASSWORD)).signedIn).toBe(true);
  });

  it('treats an e-mail nobody signed up with the same, so a 429 does not tell who exists', async () => {
    const nobody = `nobody-${crypto.randomUUID()}@example.test`;
    await failFromEverywhere(nobody);
    const answer = await apiSignIn(nobody, PASSWORD);
    expect(answer.status).toBe(429);
    expect(answer.body.code).toBe('rate_limited');
  });

  it('counts failures only: a right password refunds its own attempt', async () => {
    const person = await signUpPerson(w, 'Busy');
    const failures = SIGN_IN_FAILURES_PER_WINDOW - 4;
    for (let i = 0; i < 5; i++) expect((await apiSignIn(person.email, PASSWORD)).status).toBe(201);
    for (let i = 0; i < failures; i++)
      expect((await apiSignIn(person.email, 'not it at all')).status).toBe(401);
    // Had the five right ones counted, the account would be over the limit by now.
    expect((await apiSignIn(person.email, PASSWORD)).status).toBe(201);
  });
});
