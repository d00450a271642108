import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, MINUTE } from '../../src/lib/clock.ts';
import { hashSecret } from '../../src/lib/ids.ts';
import { expectProblem } from '../http/expect.ts';
import { call, type Person, signUpPerson, signUpWithEmail, verificationLink } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PASSWORD, PageClient, signInInBrowser } from '../web/page-client.ts';

let w: TestWaybill;
let n = 0;
const freshEmail = () => `verify${++n}-${Date.now()}@example.test`;

beforeAll(async () => {
  // The listed address in another letter case than the one that signs up.
  w = await startWaybill({ env: { WAYBILL_REVIEWER_EMAILS: 'New.Colleague@Example.test' } });
});
afterAll(async () => {
  await w?.close();
});

async function me(person: Person) {
  const answer = await call(w, 'GET', '/v1/me', { token: person.token });
  expect(answer.status).toBe(200);
  return answer.body;
}

/** Opens a link in a browser of its own (signed out) and presses its button. */
async function pressLink(link: string) {
  const url = new URL(link);
  const client = new PageClient(w);
  const opened = await client.get(`${url.pathname}${url.search}`);
  if (opened.status !== 200) return opened;
  return client.post('/verify-email', { token: url.searchParams.get('token') ?? '' });
}

describe('verified e-mail addresses', () => {
  it('sign-up mails a single-use link; opening it shows a button, pressing it verifies', async () => {
    const person = await signUpPerson(w, 'Una', { verified: false });
    expect(await me(person)).toMatchObject({ email_verified: false });
    const link = await verificationLink(w, person.email);
    expect(link.startsWith(`${w.ctx.config.webUrl}/verify-email?token=`)).toBe(true);
    const token = new URL(link).searchParams.get('token') ?? '';

    // The token is kept only as its hash.
    const stored = await w.ctx.db.selectFrom('email_verifications').selectAll().execute();
    expect(stored.some((row) => row.token_hash === hashSecret(token))).toBe(true);
    expect(JSON.stringify(stored)).not.toContain(token);

    // Fetching the page (as a mail scanner would) does not spend it.
    const client = new PageClient(w);
    const opened = await client.get(new URL(link).pathname + new URL(link).search);
    expect(opened.status).toBe(200);
    expect(opened.text).toContain(person.email);
    expect(await me(person)).toMatchObject({ email_verified: false });

    const pressed = await client.post('/verify-email', { token });
    expect(pressed.status).toBe(200);
    expect(pressed.text).toContain('confirmed');
    expect(await me(person)).toMatchObject({ email_verified: true });

    // Single use.
    expect((await pressLink(link)).status).toBe(400);
    expect((await client.post('/verify-email', { token })).status).toBe(400);
  });

  it('a link works for 24 hours', async () => {
    const person = await signUpPerson(w, 'Late', { verified: false });
    const link = await verificationLink(w, person.email);
    w.clock.advance(DAY);
    expect((await pressLink(link)).status).toBe(400);
    expect(await me(person)).toMatchObject({ email_verified: false });

    const fresh = await call(w, 'POST', '/v1/auth/email-verification', { token: person.token });
    expect(fresh.status).toBe(202);
    expect(fresh.body.email).toBe(person.email);
    const newLink = await verificationLink(w, person.email);
    expect(newLink).not.toBe(link);
    w.clock.advance(DAY - MINUTE);
    expect((await pressLink(newLink)).status).toBe(200);
    expect(await me(person)).toMatchObject({ email_verified: true });
  });

  it('resending is rate-limited, replaces the older link and ends once verified', async () => {
    const person = await signUpPerson(w, 'Impatient', { verified: false });
    const first = await verificationLink(w, person.email);
    // Sign-up has just sent one: the next waits a minute.
    const tooSoon = await call(w, 'POST', '/v1/auth/email-verification', { token: person.token });
    expectProblem(tooSoon, 429, 'rate_limited');
    expect(Number(tooSoon.headers['retry-after'])).toBeGreaterThan(0);

    w.clock.advance(MINUTE);
    expect((await call(w, 'POST', '/v1/auth/email-verification', { token: person.token })).status).toBe(202);
    const second = await verificationLink(w, person.email);
    expect((await pressLink(first)).status).toBe(400);
    for (let i = 0; i < 3; i++) {
      w.clock.advance(MINUTE);
      expect((await call(w, 'POST', '/v1/auth/email-verification', { token: person.token })).status).toBe(
        202,
      );
    }
    // Five links within the hour (the sign-up's included): the sixth waits for the hour.
    w.clock.advance(MINUTE);
    const hourly = await call(w, 'POST', '/v1/auth/email-verification', { token: person.token });
    expectProblem(hourly, 429, 'rate_limited');
    expect(Number(hourly.headers['retry-after'])).toBeGreaterThan(50 * 60);
    expect((await pressLink(second)).status).toBe(400);

    expect((await pressLink(await verificationLink(w, person.email))).status).toBe(200);
    w.clock.advance(DAY);
    const done = await call(w, 'POST', '/v1/auth/email-verification', { token: person.token });
    expectProblem(done, 409, 'user.email_already_verified');
    // Without a session token: 401.
    expect((await call(w, 'POST', '/v1/auth/email-verification')).status).toBe(401);
  });

  it('a listed reviewer address gives reviewer powers only once verified, in any letter case', async () => {
    // Whoever signs up first with a colleague's address, before the colleague does.
    const squatter = await signUpWithEmail(w, 'NEW.colleague@example.TEST', 'Squatter', { verified: false });
    expect(await me(squatter)).toMatchObject({ is_reviewer: false, email_verified: false });
    const queue = await call(w, 'GET', '/v1/review/submissions', { token: squatter.token });
    expectProblem(queue, 403, 'auth.email_not_verified');
    const console = await signInInBrowser(w, squatter.email);
    const page = await console.get('/review');
    expect(page.status).toBe(403);
    expect(page.text).toContain('confirmed');
    // The development mailbox does not hand the squatter the link meant for the address's owner.
    const mailbox = await console.get('/dev/mailbox');
    expect(mailbox.status).toBe(200);
    expect(mailbox.text).not.toContain('/verify-email?token=');

    // The address's owner opens the link: now the account is a reviewer.
    expect((await pressLink(await verificationLink(w, squatter.email))).status).toBe(200);
    expect(await me(squatter)).toMatchObject({ is_reviewer: true, email_verified: true });
    expect((await call(w, 'GET', '/v1/review/submissions', { token: squatter.token })).status).toBe(200);
    expect((await console.get('/review')).status).toBe(200);
  });

  it('joining a company by invitation waits for a verified address', async () => {
    const owner = await signUpPerson(w, 'Owner');
    const company = await call(w, 'POST', '/v1/companies', { token: owner.token, body: { name: 'Acme' } });
    const tenantId = company.body.id as string;
    const invitee = await signUpPerson(w, 'Invitee', { verified: false });
    const refused = await call(w, 'POST', `/v1/companies/${tenantId}/members`, {
      token: owner.token,
      body: { email: invitee.email, role: 'admin' },
    });
    expectProblem(refused, 409, 'member.email_not_verified');
    expect((await me(invitee)).memberships).toEqual([]);

    expect((await pressLink(await verificationLink(w, invitee.email))).status).toBe(200);
    const added = await call(w, 'POST', `/v1/companies/${tenantId}/members`, {
      token: owner.token,
      body: { email: invitee.email.toUpperCase(), role: 'admin' },
    });
    expect(added.status).toBe(201);
  });

  it('an unverified person signs in, works as before and is told what is waiting', async () => {
    const email = freshEmail();
    const client = new PageClient(w);
    await client.get('/signup');
    const signedUp = await client.post('/signup', {
      name: 'Una',
      email,
      password: PASSWORD,
      return_to: '/x',
    });
    expect(signedUp.status).toBe(303);
    expect((await client.get('/dashboard/companies/new')).status).toBe(200);
    const created = await client.post('/dashboard/companies', { name: 'Una Co' });
    expect(created.status, created.text.slice(0, 300)).toBe(303);
    const dashboard = await client.get('/dashboard/shipments');
    expect(dashboard.status).toBe(200);
    expect(dashboard.text).toContain('Confirm your e-mail address');

    // A new link from the banner.
    w.clock.advance(MINUTE);
    const resent = await client.post('/verify-email/resend', {});
    expect(resent.status).toBe(200);
    const link = new URL(await verificationLink(w, email));
    expect((await client.get(`${link.pathname}${link.search}`)).status).toBe(200);
    expect((await client.post('/verify-email', { token: link.searchParams.get('token') ?? '' })).status).toBe(
      200,
    );
    expect((await client.get('/dashboard/shipments')).text).not.toContain('Confirm your e-mail address');
  });
});
