import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerApp } from '../apps/fixtures.ts';
import { expectProblem } from '../http/expect.ts';
import { call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient } from '../web/page-client.ts';
import { REVIEWERS, reviewerEnv, signUpAs } from './support.ts';

let w: TestWaybill;
let reviewer: Person;
let otherReviewer: Person;

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  otherReviewer = await signUpAs(w, REVIEWERS[1] as string, 'Other Reviewer');
});
afterAll(async () => {
  await w?.close();
});

const moderate = (app: Json, action: string, token: string, body: unknown) =>
  call(w, 'POST', `/v1/review/apps/${app.id}/${action}`, { token, body });

async function statusOf(app: Json, developer: Person): Promise<string> {
  const answer = await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token });
  return answer.body.status;
}

/** The review console in a browser holding the person's session. */
async function consoleOf(person: Person): Promise<PageClient> {
  const client = new PageClient(w);
  client.cookies.set('waybill_session', person.token);
  expect((await client.get('/review')).status).toBe(200);
  return client;
}

describe('moderation of apps (suspend, delist, reinstate)', () => {
  it('checks that the caller is a reviewer before looking at the body', async () => {
    const developer = await signUpPerson(w, 'Developer');
    const app = await registerApp(w, developer);
    for (const body of [{}, { reason: '' }, { reason: 42, extra: true }, undefined]) {
      expectProblem(await moderate(app, 'suspend', developer.token, body), 403, 'auth.insufficient_scope');
      expectProblem(await moderate(app, 'reinstate', developer.token, body), 403, 'auth.insufficient_scope');
    }
    // A reviewer's bad body is a 400.
    expectProblem(await moderate(app, 'suspend', reviewer.token, {}), 400, 'validation.failed');
    expect(await statusOf(app, developer)).toBe('private');
  });

  it('refuses an empty or blank reason, in the API and in the console', async () => {
    const developer = await signUpPerson(w, 'Blank');
    const app = await registerApp(w, developer);
    for (const reason of ['', '   ', '\t\n']) {
      expectProblem(await moderate(app, 'suspend', reviewer.token, { reason }), 400, 'validation.failed');
    }
    const console = await consoleOf(reviewer);
    for (const reason of ['', '   ']) {
      const refused = await console.post(`/review/apps/${app.id}/suspend`, {
        reason,
        submission_id: '',
        confirmed: 'yes',
      });
      expect(refused.status).toBe(400);
    }
    expect(await statusOf(app, developer)).toBe('private');
    const audit = await w.ctx.db
      .selectFrom('audit_events')
      .select('action')
      .where('actor', '=', reviewer.id)
      .execute();
    expect(audit).toEqual([]);

    // The console asks once more on a page of its own (by GET; nothing changes yet), then suspends.
    const unasked = await console.post(`/review/apps/${app.id}/suspend`, {
      reason: 'spam',
      submission_id: '',
    });
    expect(unasked.status).toBe(303);
    expect(unasked.location).toBe(`/review/apps/${app.id}/suspend`);
    const question = await console.get(`/review/apps/${app.id}/suspend`);
    expect(question.status).toBe(200);
    expect(question.text).toContain(`Suspend ${app.name}?`);
    expect(question.text).toContain('0 companies have it installed');
    expect(await statusOf(app, developer)).toBe('private');
    const done = await console.post(`/review/apps/${app.id}/suspend`, {
      reason: 'spam',
      submission_id: '',
      confirmed: 'yes',
    });
    expect(done.status).toBe(303);
    expect(await statusOf(app, developer)).toBe('suspended');
  });

  it('a reviewer does not moderate the app of someone who shares a company with them', async () => {
    const developer = await signUpPerson(w, 'Colleague');
    const app = await registerApp(w, developer);
    const company = await call(w, 'POST', '/v1/companies', {
      token: reviewer.token,
      body: { name: 'Shared' },
    });
    const joined = await call(w, 'POST', `/v1/companies/${company.body.id}/members`, {
      token: reviewer.token,
      body: { email: developer.email, role: 'member' },
    });
    expect(joined.status).toBe(201);

    const suspend = await moderate(app, 'suspend', reviewer.token, { reason: 'a rival of a friend' });
    expectProblem(suspend, 403, 'review.conflict_of_interest');
    expect(await statusOf(app, developer)).toBe('private');
    const console = await consoleOf(reviewer);
    expect(
      (
        await console.post(`/review/apps/${app.id}/suspend`, {
          reason: 'x',
          submission_id: '',
          confirmed: 'yes',
        })
      ).status,
    ).toBe(403);
    expect(await statusOf(app, developer)).toBe('private');

    // Another reviewer may; the colleague may not reinstate either.
    expect((await moderate(app, 'suspend', otherReviewer.token, { reason: 'sends spam' })).status).toBe(200);
    expectProblem(
      await moderate(app, 'reinstate', reviewer.token, { reason: 'my friend fixed it' }),
      403,
      'review.conflict_of_interest',
    );
    expect(await statusOf(app, developer)).toBe('suspended');
    expect((await moderate(app, 'reinstate', otherReviewer.token, { reason: 'fixed' })).status).toBe(200);

    // Their own app, the same.
    const own = await registerApp(w, reviewer);
    expectProblem(
      await moderate(own, 'suspend', reviewer.token, { reason: 'mine' }),
      403,
      'review.conflict_of_interest',
    );
  });
});
