import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECOND } from '../../src/lib/clock.ts';
import {
  ACCOUNT_FREE_FAILURES,
  DEVICE_COOKIE,
  MAX_DELAY_MS,
  SIGN_IN_FREE_FAILURES,
} from '../../src/modules/accounts/sign-in-throttle.ts';
import { signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

const PASSWORD = 'correct horse battery';

// Every sign-in here runs the slow password hash, the failures too (on purpose): dozens per test.
describe('the sign-in throttle: per account and source, a growing delay, never a lock-out', {
  timeout: 120_000,
}, () => {
  let w: TestWaybill;
  let addressCounter = 0;
  /** A new client address each time, so that the per-address limit never comes into play. */
  const nextAddress = () => `10.${Math.floor(++addressCounter / 250)}.${addressCounter % 250}.1`;
  beforeAll(async () => {
    // The per-address request limit (real time) apart: this is about the throttle (the clock's time).
    w = await startWaybill({ env: { WAYBILL_SIGN_IN_RATE_LIMIT: '100000' } });
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

  /** Guesses from one source as fast as its delay lets it (waiting what Retry-After says): answers the last wait. */
  async function guessFrom(email: string, guesses: number, address: string): Promise<number> {
    let wait = 0;
    for (let i = 0; i < guesses; i++) {
      let answer = await apiSignIn(email, `wrong ${i}`, address);
      if (answer.status === 429) {
        expect(answer.retryAfter).toBeGreaterThan(0);
        wait = answer.retryAfter ?? 0;
        w.clock.advance(wait * SECOND);
        answer = await apiSignIn(email, `wrong ${i}`, address);
      }
      expect(answer.status).toBe(401);
    }
    return wait;
  }

  it("a stranger's guesses slow the stranger: the person signs in at once from a new browser or address", async () => {
    const person = await signUpPerson(w, 'Targeted');
    const stranger = nextAddress();
    // The attack of issue 30: a few guesses, then one about every 15 minutes, for as long as they like.
    await guessFrom(person.email, SIGN_IN_FREE_FAILURES + 12, stranger);
    for (let round = 0; round < 4; round++) {
      const held = await apiSignIn(person.email, 'another guess', stranger);
      expect(held.status).toBe(429);
      w.clock.advance((held.retryAfter ?? 0) * SECOND);
      expect((await apiSignIn(person.email, 'another guess', stranger)).status).toBe(401);
      // Meanwhile the person, from a browser and an address never seen, is not held back.
      expect((await formSignIn(person.email, PASSWORD)).signedIn).toBe(true);
      expect(await apiSignIn(person.email, PASSWORD)).toMatchObject({ status: 201, signedIn: true });
    }
  });

  it('after a few failures each further attempt from that source waits longer, up to a cap, the right password too', async () => {
    const person = await signUpPerson(w, 'Mistyper');
    const source = nextAddress();
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++) {
      expect((await apiSignIn(person.email, `wrong ${i}`, source)).status).toBe(401);
    }
    // From that address the next attempt waits: 1 s, then 2 s, then 4 s...
    expect(await apiSignIn(person.email, PASSWORD, source)).toMatchObject({ status: 429, retryAfter: 1 });
    // The e-mail is the same account whatever its case or spaces.
    expect((await apiSignIn(` ${person.email.toUpperCase()} `, PASSWORD, source)).status).toBe(429);
    w.clock.advance(SECOND);
    expect((await apiSignIn(person.email, 'wrong again', source)).status).toBe(401);
    expect((await apiSignIn(person.email, PASSWORD, source)).retryAfter).toBe(2);
    // Thirty guesses later the delay has stopped growing at its cap: never a lock.
    expect(await guessFrom(person.email, 30, source)).toBe(MAX_DELAY_MS / SECOND);
    const capped = await apiSignIn(person.email, PASSWORD, source);
    expect(capped.status).toBe(429);
    w.clock.advance((capped.retryAfter ?? 0) * SECOND);
    expect(await apiSignIn(person.email, PASSWORD, source)).toMatchObject({ status: 201, signedIn: true });
  });

  it('an IPv6 /64 is one source; the next /64 is another', async () => {
    const person = await signUpPerson(w, 'Six');
    const prefix = `2001:db8:${(++addressCounter).toString(16)}:1`;
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++) {
      expect((await apiSignIn(person.email, `wrong ${i}`, `${prefix}::${(i + 1).toString(16)}`)).status).toBe(
        401,
      );
    }
    expect((await apiSignIn(person.email, PASSWORD, `${prefix}:ffff:ffff:ffff:ffff`)).status).toBe(429);
    expect(
      (await apiSignIn(person.email, PASSWORD, `2001:db8:${addressCounter.toString(16)}:2::1`)).status,
    ).toBe(201);
  });

  it('a browser that signed in before keeps its own standing, wherever it is; a made-up device cookie does not', async () => {
    const person = await signUpPerson(w, 'Victim', { verified: true });
    const home = nextAddress();
    const browser = await formSignIn(person.email, PASSWORD, { remoteAddress: home });
    expect(browser.signedIn).toBe(true);
    expect(browser.device).toMatch(/^dev_/);
    // Someone guesses from the very address the person uses (a shared network).
    await guessFrom(person.email, SIGN_IN_FREE_FAILURES + 3, home);
    expect((await apiSignIn(person.email, PASSWORD, home)).status).toBe(429);
    // The person's own browser signs in at once, there or anywhere.
    expect(
      await formSignIn(person.email, PASSWORD, { device: browser.device, remoteAddress: home }),
    ).toMatchObject({
      status: 303,
      signedIn: true,
    });
    // A device cookie made up by the attacker is not one that signed in: the address's standing.
    expect(
      (await formSignIn(person.email, PASSWORD, { device: 'dev_madeup', remoteAddress: home })).status,
    ).toBe(429);
    // The trusted browser's own failures slow down that browser only.
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++) {
      expect((await formSignIn(person.email, 'typo', { device: browser.device })).status).toBe(401);
    }
    expect((await formSignIn(person.email, PASSWORD, { device: browser.device })).status).toBe(429);
    expect((await apiSignIn(person.email, PASSWORD)).status).toBe(201);
  });

  it('guessing spread over many sources meets the account ceiling: slowed, while the right password from a clean source still signs in', async () => {
    const person = await signUpPerson(w, 'Popular');
    // Failures from many addresses, each below its own free count.
    const used: string[] = [];
    for (let i = 0; i < ACCOUNT_FREE_FAILURES; i++) {
      if (i % (SIGN_IN_FREE_FAILURES - 1) === 0) used.push(nextAddress());
      expect((await apiSignIn(person.email, `spread ${i}`, used.at(-1))).status).toBe(401);
    }
    // Past the ceiling, a source that has failed keeps the account's pace, below its own free count ...
    const failed = used[0] as string;
    expect(await apiSignIn(person.email, PASSWORD, failed)).toMatchObject({ status: 429, retryAfter: 1 });
    // ... a clean source is never refused: the right password signs in ...
    expect(await apiSignIn(person.email, PASSWORD)).toMatchObject({ status: 201, signedIn: true });
    // ... and a wrong guess from a clean source buys that source one guess per pace, not five.
    const fresh = nextAddress();
    expect((await apiSignIn(person.email, 'one guess', fresh)).status).toBe(401);
    const slowed = await apiSignIn(person.email, 'second guess', fresh);
    expect(slowed.status).toBe(429);
    // The pace grows with every failure, up to the cap, and never becomes a lock.
    for (let i = 0; i < 15; i++) expect((await apiSignIn(person.email, `wide ${i}`)).status).toBe(401);
    const capped = await apiSignIn(person.email, PASSWORD, fresh);
    expect(capped.status).toBe(429);
    expect(capped.retryAfter).toBeGreaterThan(60);
    expect(capped.retryAfter).toBeLessThanOrEqual(MAX_DELAY_MS / SECOND);
    w.clock.advance((capped.retryAfter ?? 0) * SECOND);
    expect(await apiSignIn(person.email, PASSWORD, fresh)).toMatchObject({ status: 201, signedIn: true });
  });

  it('treats an e-mail nobody signed up with the same, so a 429 does not tell who exists', async () => {
    const nobody = `nobody-${crypto.randomUUID()}@example.test`;
    const source = nextAddress();
    for (let i = 0; i < SIGN_IN_FREE_FAILURES; i++)
      expect((await apiSignIn(nobody, 'x', source)).status).toBe(401);
    expect(await apiSignIn(nobody, PASSWORD, source)).toMatchObject({ status: 429, retryAfter: 1 });
  });

  it('counts failures in a row: a right password starts the count again', async () => {
    const person = await signUpPerson(w, 'Busy');
    const source = nextAddress();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < SIGN_IN_FREE_FAILURES - 1; i++) {
        expect((await apiSignIn(person.email, 'not it at all', source)).status).toBe(401);
      }
      expect((await apiSignIn(person.email, PASSWORD, source)).status).toBe(201);
    }
  });
});
