import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY } from '../../src/lib/clock.ts';
import { MAX_DELAY_MS } from '../../src/modules/accounts/sign-in-throttle.ts';
import { expectProblem } from '../http/expect.ts';
import { call, signUpPerson, verifyEmailAddress } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

const PASSWORD = 'correct horse battery';
let w: TestWaybill;
let n = 0;
const freshEmail = () => `people${++n}-${Date.now()}@example.test`;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

describe('sign-up', () => {
  it('normalises the e-mail and refuses a second account for it', async () => {
    const email = freshEmail();
    const first = await call(w, 'POST', '/v1/auth/signup', {
      body: { email: email.toUpperCase(), password: PASSWORD, name: 'Ada' },
    });
    expect(first.status).toBe(201);
    expect(first.body).toMatchObject({ email, name: 'Ada', is_reviewer: false });
    expect(first.body.id).toMatch(/^usr_/);
    expect(first.body).not.toHaveProperty('password_hash');

    const again = await call(w, 'POST', '/v1/auth/signup', {
      body: { email, password: PASSWORD, name: 'Other Ada' },
    });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('user.email_taken');
    expectProblem(again, 409, 'user.email_taken');
  });

  it('wants a password of at least 10 characters', async () => {
    const email = freshEmail();
    const short = await call(w, 'POST', '/v1/auth/signup', {
      body: { email, password: '123456789', name: 'Short' },
    });
    expect(short.status).toBe(400);
    expect(short.body.code).toBe('validation.failed');
    expect(short.body.errors).toContainEqual(expect.objectContaining({ path: '/password' }));
    // Nothing was created: the e-mail is still free.
    const ok = await call(w, 'POST', '/v1/auth/signup', {
      body: { email, password: '1234567890', name: 'Ok' },
    });
    expect(ok.status).toBe(201);
  });

  it('marks reviewers from WAYBILL_REVIEWER_EMAILS once the address is verified', async () => {
    const reviewer = await call(w, 'POST', '/v1/auth/signup', {
      body: { email: 'Reviewer@Example.test', password: PASSWORD, name: 'Rene' },
    });
    expect(reviewer.body).toMatchObject({ is_reviewer: false, email_verified: false });
    await verifyEmailAddress(w, 'reviewer@example.test');
    const session = await call(w, 'POST', '/v1/auth/sessions', {
      body: { email: 'reviewer@example.test', password: PASSWORD },
    });
    expect(session.body.user).toMatchObject({ is_reviewer: true, email_verified: true });
  });
});

describe('sessions', () => {
  it('signs in with a ust_ token that expires in 14 days, and refuses a wrong password', async () => {
    const email = freshEmail();
    await call(w, 'POST', '/v1/auth/signup', { body: { email, password: PASSWORD, name: 'Bo' } });
    const session = await call(w, 'POST', '/v1/auth/sessions', {
      body: { email: `  ${email.toUpperCase()}`, password: PASSWORD },
    });
    expect(session.status).toBe(201);
    expect(session.body.token).toMatch(/^ust_[0-9A-Za-z]{43}$/);
    expect(session.body.expires_at).toBe(new Date(w.clock.now().getTime() + 14 * DAY).toISOString());
    expect(session.body.user.email).toBe(email);

    const wrong = await call(w, 'POST', '/v1/auth/sessions', { body: { email, password: `${PASSWORD}!` } });
    expect(wrong.status).toBe(401);
    expect(wrong.body.code).toBe('auth.invalid_credentials');
    expectProblem(wrong, 401, 'auth.invalid_credentials');
    const nobody = await call(w, 'POST', '/v1/auth/sessions', {
      body: { email: freshEmail(), password: PASSWORD },
    });
    expect(nobody.status).toBe(401);
    expect(nobody.body.code).toBe('auth.invalid_credentials');
  });

  it('signing out ends the token', async () => {
    const person = await signUpPerson(w);
    expect((await call(w, 'GET', '/v1/me', { token: person.token })).status).toBe(200);
    const out = await call(w, 'DELETE', '/v1/auth/sessions/current', { token: person.token });
    expect(out.status).toBe(204);
    const after = await call(w, 'GET', '/v1/me', { token: person.token });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('auth.invalid_token');
    expect(after.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('a session expires after 14 days', async () => {
    const person = await signUpPerson(w);
    w.clock.advance(13 * DAY);
    expect((await call(w, 'GET', '/v1/me', { token: person.token })).status).toBe(200);
    w.clock.advance(2 * DAY);
    const expired = await call(w, 'GET', '/v1/me', { token: person.token });
    expect(expired.status).toBe(401);
    expect(expired.body.code).toBe('auth.invalid_token');
    expect(expired.headers['www-authenticate']).toMatch(/^Bearer/);
  });

  it('stores sessions and passwords hashed, never in plain text', async () => {
    const email = freshEmail();
    await call(w, 'POST', '/v1/auth/signup', { body: { email, password: PASSWORD, name: 'Cy' } });
    const session = await call(w, 'POST', '/v1/auth/sessions', {
      body: { email, password: PASSWORD },
      headers: { 'idempotency-key': `signin-${email}` },
    });
    const token: string = session.body.token;
    const dump = JSON.stringify([
      await w.ctx.db.selectFrom('users').selectAll().where('email', '=', email).execute(),
      await w.ctx.db.selectFrom('sessions').selectAll().execute(),
      await w.ctx.db.selectFrom('idempotency_keys').selectAll().execute(),
    ]);
    expect(dump).toContain('scrypt$');
    expect(dump).not.toContain(PASSWORD);
    expect(dump).not.toContain(token);
  });
});

describe('/v1/me', () => {
  it('answers the person with their memberships', async () => {
    const person = await signUpPerson(w, 'Meg');
    const empty = await call(w, 'GET', '/v1/me', { token: person.token });
    expect(empty.body).toMatchObject({ id: person.id, email: person.email, name: 'Meg', memberships: [] });
    const company = await call(w, 'POST', '/v1/companies', { token: person.token, body: { name: 'Meg Co' } });
    const me = await call(w, 'GET', '/v1/me', { token: person.token });
    expect(me.body.memberships).toEqual([
      {
        tenant_id: company.body.id,
        company_name: 'Meg Co',
        company_live: false,
        role: 'owner',
        customer_account_id: null,
        customer_account_name: null,
        manages_integrations: true,
      },
    ]);
  });

  it('answers 401 without a token and for an unknown one', async () => {
    for (const token of [undefined, 'ust_unknown', 'sk_live_nope', 'garbage']) {
      const response = await call(w, 'GET', '/v1/me', token ? { token } : {});
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('auth.invalid_token');
      expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
      expectProblem(response, 401, 'auth.invalid_token');
    }
  });
});

describe('sign-in rate limit', () => {
  it('answers the 11th attempt within a minute with 429 rate_limited', async () => {
    const email = freshEmail();
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      // Past the account's own growing delay (sign-in-throttle.ts): this is the per-address limit.
      w.clock.advance(MAX_DELAY_MS);
      const attempt = await call(w, 'POST', '/v1/auth/sessions', {
        body: { email, password: `guess-${i}-xxxx` },
      });
      statuses.push(attempt.status);
      if (i === 10) {
        expect(attempt.body.code).toBe('rate_limited');
        expectProblem(attempt, 429, 'rate_limited');
      }
    }
    expect(statuses).toEqual([...Array(10).fill(401), 429]);
    // Another client address is not held back by this one's attempts.
    w.clock.advance(MAX_DELAY_MS);
    const other = await w.app.inject({
      method: 'POST',
      url: '/v1/auth/sessions',
      remoteAddress: '10.0.0.9',
      payload: { email, password: 'still-wrong-x' },
    });
    expect(other.statusCode).toBe(401);
    // Nor does a forged X-Forwarded-For escape the limit.
    const forged = await call(w, 'POST', '/v1/auth/sessions', {
      body: { email, password: 'guess-forged' },
      headers: { 'x-forwarded-for': '203.0.113.7' },
    });
    expect(forged.status).toBe(429);
  });
});
