import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DAY } from '../../src/lib/clock.ts';
import { install } from '../apps/fixtures.ts';
import { call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  listing,
  ownerOfCompany,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signInAgain,
  signUpAs,
  startEventsReceiver,
  submitAndDecide,
} from './support.ts';

let w: TestWaybill;
let developer: Person;
let reviewer: Person;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;
let app: Json;

interface Company {
  owner: Person;
  tenantId: string;
}

const company = (name: string): Promise<Company> => ownerOfCompany(w, name);
const signedIn = (person: Person) => signInAgain(w, person);

beforeEach(async () => {
  developer = await signedIn(developer);
  reviewer = await signedIn(reviewer);
});

async function installed(c: Company, appId = app.id) {
  await install(w, { appId, tenantId: c.tenantId, userId: c.owner.id });
}

function review(person: Person, body: Record<string, unknown>, appId = app.id) {
  return call(w, 'POST', `/v1/store/apps/${appId}/reviews`, { token: person.token, body });
}

async function storeApp(person: Person) {
  return (await call(w, 'GET', `/v1/store/apps/${app.id}`, { token: person.token })).body;
}

async function reviews(person: Person) {
  return (await call(w, 'GET', `/v1/store/apps/${app.id}/reviews?limit=100`, { token: person.token })).body
    .data as Json[];
}

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Review Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  receiver = await startEventsReceiver(() => 200);
  app = await registerPublishable(w, developer, receiver.url, { name: 'Reviewed App' });
  await submitAndDecide(w, developer, reviewer, app.id, { listing: listing(app.scopes) }, 'approved');
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

describe('reviews', () => {
  it('lets a company installed for 7 days review once, edit and delete; others get 403', async () => {
    const early = await company('Early Company');
    const late = await company('Late Company');
    await installed(early);
    w.clock.advance(6 * DAY);
    await installed(late);
    // Six days in: not yet.
    const tooSoon = await review(early.owner, { rating: 4, body: 'Good so far.' });
    expect(tooSoon.status).toBe(403);
    expect(tooSoon.body.code).toBe('review.not_eligible');

    w.clock.advance(DAY);
    const written = await review(early.owner, { rating: 4, body: 'Prints our labels every morning.' });
    expect(written.status).toBe(201);
    expect(written.body).toMatchObject({
      rating: 4,
      body: 'Prints our labels every morning.',
      company_name: 'Early Company',
      reply: null,
      hidden: false,
      mine: true,
    });
    // Installed today (one day ago): 403; a second review of the same company: 409.
    const today = await review(late.owner, { rating: 5, body: 'Just installed it.' });
    expect(today.status).toBe(403);
    expect(today.body.code).toBe('review.not_eligible');
    const again = await review(early.owner, { rating: 1, body: 'A second opinion.' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('review.already_exists');

    // A member who is neither owner nor admin does not speak for the company.
    const member = await signUpPerson(w, 'Plain Member');
    const added = await call(w, 'POST', `/v1/companies/${early.tenantId}/members`, {
      token: early.owner.token,
      body: { email: member.email, role: 'member' },
    });
    expect(added.status).toBe(201);
    expect((await review(member, { rating: 1, body: 'I was not asked.' })).status).toBe(403);
    // A company that never installed it, and an unpublished app.
    const never = await company('Never Installed');
    expect((await review(never.owner, { rating: 5, body: 'Looks nice.' })).body.code).toBe(
      'review.not_eligible',
    );
    expect((await review(early.owner, { rating: 5, body: 'x' }, 'app_nosuchapp0000000000000')).status).toBe(
      404,
    );

    let shown = await storeApp(never.owner);
    expect(shown).toMatchObject({ rating_avg: 4, review_count: 1 });
    expect(shown.rating_distribution).toEqual({ '1': 0, '2': 0, '3': 0, '4': 1, '5': 0 });

    const edited = await call(w, 'PATCH', `/v1/store/apps/${app.id}/reviews/${written.body.id}`, {
      token: early.owner.token,
      body: { rating: 2, body: 'It stopped printing on Mondays.' },
    });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ rating: 2, body: 'It stopped printing on Mondays.' });
    shown = await storeApp(never.owner);
    expect(shown.rating_distribution).toEqual({ '1': 0, '2': 1, '3': 0, '4': 0, '5': 0 });
    // Nobody else edits or deletes it.
    const foreign = await call(w, 'PATCH', `/v1/store/apps/${app.id}/reviews/${written.body.id}`, {
      token: never.owner.token,
      body: { rating: 5 },
    });
    expect(foreign.status).toBe(404);

    const removed = await call(w, 'DELETE', `/v1/store/apps/${app.id}/reviews/${written.body.id}`, {
      token: early.owner.token,
    });
    expect(removed.status).toBe(204);
    shown = await storeApp(never.owner);
    expect(shown).toMatchObject({ rating_avg: null, review_count: 0 });
    // Deleted, the company may write a new one.
    expect((await review(early.owner, { rating: 3, body: 'Back, and better.' })).status).toBe(201);
  });

  it('takes a developer reply and a reviewer hiding with a reason, which the author and developer see', async () => {
    const author = await company('Author Company');
    const reader = await company('Reader Company');
    await installed(author);
    w.clock.advance(8 * DAY);
    const written = await review(author.owner, { rating: 1, body: 'Rude support, call me on 555-0100.' });
    expect(written.status).toBe(201);

    const reply = await call(w, 'PUT', `/v1/developer/apps/${app.id}/reviews/${written.body.id}/reply`, {
      token: developer.token,
      body: { body: 'Sorry to hear it: we wrote to you.' },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.reply.body).toBe('Sorry to hear it: we wrote to you.');
    w.clock.advance(1000);
    const edited = await call(w, 'PUT', `/v1/developer/apps/${app.id}/reviews/${written.body.id}/reply`, {
      token: developer.token,
      body: { body: 'Sorry: we called you back and fixed it.' },
    });
    expect(edited.body.reply.created_at).toBe(reply.body.reply.created_at);
    expect(edited.body.reply.updated_at).not.toBe(reply.body.reply.created_at);
    // Only the app's developer replies.
    const notMine = await call(w, 'PUT', `/v1/developer/apps/${app.id}/reviews/${written.body.id}/reply`, {
      token: reader.owner.token,
      body: { body: 'I am not the developer.' },
    });
    expect(notMine.status).toBe(404);
    const seen = (await reviews(reader.owner)).find((r) => r.id === written.body.id);
    expect(seen.reply.body).toBe('Sorry: we called you back and fixed it.');
    const before = (await storeApp(reader.owner)).review_count;

    // Only reviewers hide; a reason is required.
    const byOwner = await call(w, 'POST', `/v1/review/reviews/${written.body.id}/hide`, {
      token: author.owner.token,
      body: { reason: 'I changed my mind.' },
    });
    expect(byOwner.status).toBe(403);
    const blank = await call(w, 'POST', `/v1/review/reviews/${written.body.id}/hide`, {
      token: reviewer.token,
      body: { reason: '  ' },
    });
    expect(blank.status).toBe(400);
    const hidden = await call(w, 'POST', `/v1/review/reviews/${written.body.id}/hide`, {
      token: reviewer.token,
      body: { reason: 'It shares a phone number.' },
    });
    expect(hidden.status).toBe(200);
    expect(hidden.body).toMatchObject({ hidden: true, hidden_reason: 'It shares a phone number.' });

    expect((await reviews(reader.owner)).map((r) => r.id)).not.toContain(written.body.id);
    expect((await storeApp(reader.owner)).review_count).toBe(before - 1);
    const own = (await reviews(author.owner)).find((r) => r.id === written.body.id);
    expect(own).toMatchObject({ hidden: true, hidden_reason: 'It shares a phone number.', mine: true });
    const developerView = await call(w, 'GET', `/v1/developer/apps/${app.id}/reviews`, {
      token: developer.token,
    });
    expect(developerView.body.data.find((r: Json) => r.id === written.body.id)).toMatchObject({
      hidden: true,
      hidden_reason: 'It shares a phone number.',
    });

    const back = await call(w, 'POST', `/v1/review/reviews/${written.body.id}/show`, {
      token: reviewer.token,
    });
    expect(back.body.hidden).toBe(false);
    expect((await storeApp(reader.owner)).review_count).toBe(before);
  });

  it('keeps the average and distribution exact when many companies write at once', async () => {
    const other = await registerPublishable(w, developer, receiver.url, { name: 'Busy App' });
    await submitAndDecide(w, developer, reviewer, other.id, { listing: listing(other.scopes) }, 'approved');
    const companies = await Promise.all(Array.from({ length: 10 }, (_, i) => company(`Busy ${i}`)));
    for (const c of companies) await installed(c, other.id);
    w.clock.advance(7 * DAY);
    const ratings = [5, 4, 4, 3, 1, 5, 5, 2, 4, 5];
    // Real concurrent requests over HTTP: the writes race for the same app's stats.
    const answers = await Promise.all(
      companies.map((c, i) =>
        fetch(`${w.url}/v1/store/apps/${other.id}/reviews`, {
          method: 'POST',
          headers: { authorization: `Bearer ${c.owner.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ rating: ratings[i], body: `Review number ${i}` }),
        }),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(ratings.map(() => 201));
    // And edits racing with a deletion.
    const written = (
      await call(w, 'GET', `/v1/store/apps/${other.id}/reviews?limit=100`, {
        token: developer.token,
      })
    ).body.data as Json[];
    const byCompany = new Map(written.map((r) => [r.company_name, r.id]));
    await Promise.all([
      ...companies.slice(0, 4).map((c, i) =>
        fetch(`${w.url}/v1/store/apps/${other.id}/reviews/${byCompany.get(`Busy ${i}`)}`, {
          method: 'PATCH',
          headers: { authorization: `Bearer ${c.owner.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ rating: 1 }),
        }),
      ),
      fetch(`${w.url}/v1/store/apps/${other.id}/reviews/${byCompany.get('Busy 9')}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${companies[9]?.owner.token}` },
      }),
    ]);
    const final = [1, 1, 1, 1, 1, 5, 5, 2, 4];
    const shown = (await call(w, 'GET', `/v1/store/apps/${other.id}`, { token: developer.token })).body;
    expect(shown.review_count).toBe(final.length);
    expect(shown.rating_avg).toBe(Math.round((final.reduce((a, b) => a + b, 0) / final.length) * 100) / 100);
    expect(shown.rating_distribution).toEqual({ '1': 5, '2': 1, '3': 0, '4': 1, '5': 2 });
  });

  it('checks who calls before the body, and bounds the text', async () => {
    const anonymous = await call(w, 'POST', `/v1/store/apps/${app.id}/reviews`, { body: { rating: 9 } });
    expect(anonymous.status).toBe(401);
    const c = await company('Bounds Company');
    await installed(c);
    w.clock.advance(7 * DAY);
    expect((await review(c.owner, { rating: 6, body: 'Too many stars' })).status).toBe(400);
    const long = await review(c.owner, { rating: 3, body: 'é'.repeat(2001) });
    expect(long.status).toBe(400);
    expect(long.body.errors[0].path).toBe('/body');
    expect((await review(c.owner, { rating: 3, body: 'é'.repeat(2000) })).status).toBe(201);
  });
});
