import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECOND } from '../../src/lib/clock.ts';
import {
  DEVICE_COOKIE,
  MAX_DELAY_MS,
  SIGN_IN_FREE_FAILURES,
} from '../../src/modules/accounts/sign-in-throttle.ts';
import { signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

const PASSWORD = 'correct horse battery';

// Every sign-in here runs the slow password hash, the failures too (on purpose): dozens per test.
describe('the per-account sign-in throttle: a growing delay, never a lock-out', { timeout: 120_000 }, () => {
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

  interface Answer {
    status: number;
    retryAfter: number | null;
    signedIn: boolean;
    device: string | null;
  }

  async function apiSignIn(email: string, password: string, remoteAddress = nextAddress()): Promise<Answer> {
    const response = await w.app.inject({
      method: 'POST',
      url: '/v1/auth/sessions',
      remoteAddress,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ email, password }),
    });
    const retryAfter = response.headers['retry-after'];
    return {
      status: response.statusCode,
      retryAfter: retryAfter === undefined ? null : Number(retryAfter),
      signedIn: response.statusCode === 201 && typeof response.json().token === 'string',
      device: null,
    };
  }

  /** The /signin form, from a browser that may carry a device cookie from an earlier sign-in. */
  async function formSignIn(
    email: string,
    password: string,
    options: { remoteAddress?: string; device?: string | null } = {},
  ): Promise<Answer> {
    const remoteAddress = options.remoteAddress ?? nextAddress();
    const jar = options.device ? [`${DEVICE_COOKIE}=${options.device}`] : [];
    const page = await w.app.inject({
      method: 'GET',
      url: '/signin',
      remoteAddress,
      headers: jar.length ? { cookie: jar.join('; ') } : {},
    });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const cookie = [...jar, ...page.cookies.map((c) => `${c.name}=${c.value}`)].join('; ');
    const response = await w.app.inject({
      method: 'POST',
      url: '/signin',
      remoteAddress,
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie },
      payload: new URLSearchParams({ _csrf: csrf, email, password, return_to: '/dashboard' }).toString(),
    });
    const retryAfter = response.headers['retry-after'];
    return {
      status: response.statusCode,
      retryAfter: retryAfter === undefined ? null : Number(retryAfter),
      signedIn: response.cookies.some((c) => c.name === 'waybill_session' && c.value !== ''),
      device: response.cookies.find((c) => c.name === DEVICE_COOKIE)?.value ?? null,
    };
  }

  /**
   * Someone guesses from everywhere, half through the API, half the form, as fast as the delay
   * lets them (waiting what Retry-After says): answers the last wait.
   */
  async function guessFromEverywhere(email: string, guesses: number): Promise<number> {
    let wait = 0;
    for (let i = 0; i < guesses; i++) {
      let answer = i % 2 === 0 ? await apiSignIn(email, `wrong ${i}`) : await formSignIn(email, `wrong ${i}`);
      if (answer.status === 429) {
        expect(answer.retryAfter).toBeGreaterThan(0);
        wait = answer.retryAfter ?? 0;
        w.clock.advance(wait * SECOND);
        answer = await apiSignIn(email, `wrong ${i}`);
      }
      expect(answer.status).toBe(401);
    }
    return wait;
  }

  it('after a few failures each further attempt waits longer, up to a cap, the right password too', async () => {
    const person = await signUpPerson(w, 'Targeted');
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++) {
      expect((await apiSignIn(person.email, `wrong ${i}`)).status).toBe(401);
    }
    // From anywhere unknown, the next attempt waits: 1 s, then 2 s, then 4 s...
    const first = await apiSignIn(person.email, PASSWORD);
    expect(first).toMatchObject({ status: 429, retryAfter: 1, signedIn: false });
    const form = await formSignIn(person.email, PASSWORD);
    expect(form).toMatchObject({ status: 429, retryAfter: 1, signedIn: false });
    // The e-mail is the same account whatever its case or spaces.
    expect((await apiSignIn(` ${person.email.toUpperCase()} `, PASSWORD)).status).toBe(429);
    w.clock.advance(SECOND);
    expect((await apiSignIn(person.email, 'wrong again')).status).toBe(401);
    expect((await apiSignIn(person.email, PASSWORD)).retryAfter).toBe(2);

    // Thirty guesses later the delay has stopped growing at its cap: never a lock.
    const wait = await guessFromEverywhere(person.email, 30);
    expect(wait).toBe(MAX_DELAY_MS / SECOND);
    const capped = await apiSignIn(person.email, PASSWORD);
    expect(capped.status).toBe(429);
    expect(capped.retryAfter).toBeLessThanOrEqual(MAX_DELAY_MS / SECOND);
    w.clock.advance((capped.retryAfter ?? 0) * SECOND);
    // After the wait the right password works, even from an address never seen.
    expect(await apiSignIn(person.email, PASSWORD)).toMatchObject({ status: 201, signedIn: true });
  });

  it('a browser or an address that signed in before is not held back by failures from elsewhere', async () => {
    const person = await signUpPerson(w, 'Victim', { verified: true });
    const home = nextAddress();
    const browser = await formSignIn(person.email, PASSWORD, { remoteAddress: home });
    expect(browser.signedIn).toBe(true);
    expect(browser.device).toMatch(/^dev_/);
    const office = nextAddress();
    expect((await apiSignIn(person.email, PASSWORD, office)).status).toBe(201);

    // Someone else tries to lock the person out, from everywhere, for as long as they like.
    await guessFromEverywhere(person.email, 25);
    const stranger = await apiSignIn(person.email, PASSWORD);
    expect(stranger.status).toBe(429);

    // The person's own browser signs in at once, from a new address (a phone on the move) ...
    const again = await formSignIn(person.email, PASSWORD, { device: browser.device });
    expect(again).toMatchObject({ status: 303, signedIn: true });
    // ... and so does the address they signed in from before, through the API.
    expect(await apiSignIn(person.email, PASSWORD, office)).toMatchObject({ status: 201, signedIn: true });
    // A device cookie made up by the attacker is not one that signed in.
    expect((await formSignIn(person.email, PASSWORD, { device: 'dev_madeup' })).status).toBe(429);

    // The trusted browser's own failures slow down that browser only, not the rest of its standing.
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++) {
      expect((await formSignIn(person.email, 'typo', { device: browser.device })).status).toBe(401);
    }
    expect((await formSignIn(person.email, PASSWORD, { device: browser.device })).status).toBe(429);
    expect((await apiSignIn(person.email, PASSWORD, office)).status).toBe(201);
  });

  it('treats an e-mail nobody signed up with the same, so a 429 does not tell who exists', async () => {
    const nobody = `nobody-${crypto.randomUUID()}@example.test`;
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++) expect((await apiSignIn(nobody, 'x')).status).toBe(401);
    const answer = await apiSignIn(nobody, PASSWORD);
    expect(answer).toMatchObject({ status: 429, retryAfter: 1 });
  });

  it('counts failures in a row: a right password starts the count again', async () => {
    const person = await signUpPerson(w, 'Busy');
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < SIGN_IN_FREE_FAILURES - 1; i++) {
        expect((await apiSignIn(person.email, 'not it at all')).status).toBe(401);
      }
      expect((await apiSignIn(person.email, PASSWORD)).status).toBe(201);
    }
  });
});
