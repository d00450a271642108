import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/lib/clock.ts';
import { DEMO_EMAIL_DOMAIN } from '../../src/lib/demo.ts';
import { expectProblem } from '../http/expect.ts';
import { call, signUpPerson, signUpWithEmail } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient, signInInBrowser } from '../web/page-client.ts';

/**
 * The development mailbox with the demo on (as `npm start` runs) and reviewers named (issue 30
 * item 1): whoever signs up with an address reads that address's mail at /dev/mailbox, so the page
 * must not hand out what proves the address. Only the demo's own addresses get their links there.
 */
let w: TestWaybill;
const LISTED = 'staff.reviewer@example.test';
const SECOND_LISTED = 'second.reviewer@example.test';

beforeAll(async () => {
  w = await startWaybill({
    env: {
      WAYBILL_DEMO: '1',
      WAYBILL_REVIEWER_EMAILS: `${LISTED},${SECOND_LISTED},boss@${DEMO_EMAIL_DOMAIN}`,
    },
  });
});
afterAll(async () => {
  await w?.close();
});

/** Every verification link on a page, opened and pressed as a browser would. */
async function pressEveryLink(page: string): Promise<number> {
  let pressed = 0;
  for (const match of page.matchAll(/https?:\/\/[^\s<"]+\/verify-email\?token=([^\s<"&]+)/g)) {
    const client = new PageClient(w);
    const url = new URL(match[0].replaceAll('&amp;', '&'));
    await client.get(`${url.pathname}${url.search}`);
    if ((await client.post('/verify-email', { token: url.searchParams.get('token') ?? '' })).status === 200)
      pressed++;
  }
  return pressed;
}

async function me(token: string) {
  return (await call(w, 'GET', '/v1/me', { token })).body;
}

describe('the demo mailbox', () => {
  it("does not show a reviewer address's verification link to whoever signed up with it", async () => {
    const squatter = await signUpWithEmail(w, LISTED, 'Squatter', { verified: false });
    const browser = await signInInBrowser(w, squatter.email);
    const mailbox = await browser.get('/dev/mailbox');
    expect(mailbox.status).toBe(200);
    expect(mailbox.text).not.toContain('/verify-email?token=');
    expect(await pressEveryLink(mailbox.text)).toBe(0);
    // Asking for a new link puts it in the outbox, not on the page.
    w.clock.advance(MINUTE);
    expect((await call(w, 'POST', '/v1/auth/email-verification', { token: squatter.token })).status).toBe(
      202,
    );
    const again = await browser.get('/dev/mailbox');
    expect(again.text).not.toContain('/verify-email?token=');
    expect(await me(squatter.token)).toMatchObject({ email_verified: false, is_reviewer: false });
    expectProblem(
      await call(w, 'GET', '/v1/review/submissions', { token: squatter.token }),
      403,
      'auth.email_not_verified',
    );
  });

  it('does not verify an address someone else will be invited with', async () => {
    const owner = await signUpPerson(w, 'Owner');
    const company = await call(w, 'POST', '/v1/companies', { token: owner.token, body: { name: 'Acme' } });
    const colleague = `colleague-${Date.now()}@example.test`;
    const squatter = await signUpWithEmail(w, colleague, 'Squatter', { verified: false });
    const mailbox = await (await signInInBrowser(w, squatter.email)).get('/dev/mailbox');
    expect(await pressEveryLink(mailbox.text)).toBe(0);
    const invited = await call(w, 'POST', `/v1/companies/${company.body.id}/members`, {
      token: owner.token,
      body: { email: colleague, role: 'admin' },
    });
    expectProblem(invited, 409, 'member.email_not_verified');
    expect((await me(squatter.token)).memberships).toEqual([]);
  });

  it("shows the demo's own addresses their links, but never a listed one's", async () => {
    const demoPerson = await signUpWithEmail(w, `tryout-${Date.now()}@${DEMO_EMAIL_DOMAIN}`, 'Tryout', {
      verified: false,
    });
    const mailbox = await (await signInInBrowser(w, demoPerson.email)).get('/dev/mailbox');
    expect(await pressEveryLink(mailbox.text)).toBe(1);
    expect(await me(demoPerson.token)).toMatchObject({ email_verified: true });

    const listedDemo = await signUpWithEmail(w, `boss@${DEMO_EMAIL_DOMAIN}`, 'Boss', { verified: false });
    const listedMailbox = await (await signInInBrowser(w, listedDemo.email)).get('/dev/mailbox');
    expect(await pressEveryLink(listedMailbox.text)).toBe(0);
    expect(await me(listedDemo.token)).toMatchObject({ email_verified: false, is_reviewer: false });
  });
});

describe('the review API tells nobody whether an address is on the reviewer list', () => {
  it('answers an unverified person the same, listed or not', async () => {
    const listed = await signUpWithEmail(w, SECOND_LISTED, 'Listed', { verified: false });
    const stranger = await signUpPerson(w, 'Stranger', { verified: false });
    const answersOf = async (token: string) => {
      const suspend = await call(w, 'POST', '/v1/review/apps/app_nothing/suspend', {
        token,
        body: { reason: 'x' },
      });
      const queue = await call(w, 'GET', '/v1/review/submissions', { token });
      return [suspend, queue].map((answer) => [answer.status, answer.body.code, answer.body.detail]);
    };
    const listedAnswers = await answersOf(listed.token);
    expect(listedAnswers[0]?.slice(0, 2)).toEqual([403, 'auth.email_not_verified']);
    expect(await answersOf(stranger.token)).toEqual(listedAnswers);
  });
});
