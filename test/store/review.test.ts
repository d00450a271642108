import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECOND } from '../../src/lib/clock.ts';
import { call, createCompany, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  listing,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signUpAs,
  startEventsReceiver,
  submit,
} from './support.ts';

let w: TestWaybill;
let developer: Person;
let reviewer: Person;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Reviewed Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  receiver = await startEventsReceiver(() => 200);
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

async function newSubmission(body: Record<string, unknown> = {}, owner = developer): Promise<Json> {
  const app = await registerPublishable(w, owner, receiver.url);
  const submitted = await submit(w, owner, app.id, { listing: listing(app.scopes), ...body });
  expect(submitted.status, submitted.text).toBe(201);
  return submitted.body;
}

const start = (id: string, token = reviewer.token) =>
  call(w, 'POST', `/v1/review/submissions/${id}/start`, { token });
const decision = (id: string, body: unknown, token = reviewer.token) =>
  call(w, 'POST', `/v1/review/submissions/${id}/decision`, { token, body });

describe('the review API', () => {
  it('refuses everyone but reviewers on every path, before reading the body', async () => {
    const submission = await newSubmission();
    const company = await createCompany(w);
    const paths: Array<['GET' | 'POST', string, unknown]> = [
      ['GET', '/v1/review/submissions', undefined],
      ['GET', '/v1/review/submissions?status=bogus', undefined],
      ['GET', `/v1/review/submissions/${submission.id}`, undefined],
      ['POST', `/v1/review/submissions/${submission.id}/start`, undefined],
      ['POST', `/v1/review/submissions/${submission.id}/decision`, { decision: 'approved' }],
      ['POST', `/v1/review/submissions/${submission.id}/decision`, { decision: 'maybe' }],
    ];
    for (const [method, path, body] of paths) {
      const asDeveloper = await call(w, method, path, { token: developer.token, body });
      expect(asDeveloper.status, `${method} ${path}`).toBe(403);
      expect(asDeveloper.body.code).toBe('auth.insufficient_scope');
      const asOwner = await call(w, method, path, { token: company.owner.token, body });
      expect(asOwner.status).toBe(403);
      const withApiToken = await call(w, method, path, { token: company.liveToken, body });
      expect(withApiToken.status).toBe(403);
      expect(withApiToken.body.code).toBe('auth.session_required');
      const anonymous = await call(w, method, path, { body });
      expect(anonymous.status).toBe(401);
    }
    const row = await w.ctx.db
      .selectFrom('app_submissions')
      .select('status')
      .where('id', '=', submission.id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('submitted');
  });

  it('lists the queue oldest first, filtered by status, page by page', async () => {
    const first = await newSubmission();
    w.clock.advance(SECOND);
    const second = await newSubmission();
    w.clock.advance(SECOND);
    const third = await newSubmission();
    await start(second.id);

    const waiting = await call(w, 'GET', '/v1/review/submissions?limit=100', { token: reviewer.token });
    expect(waiting.status).toBe(200);
    const ids = waiting.body.data.map((s: Json) => s.id);
    expect(ids.indexOf(first.id)).toBeLessThan(ids.indexOf(second.id));
    expect(ids.indexOf(second.id)).toBeLessThan(ids.indexOf(third.id));
    expect(waiting.body.data.find((s: Json) => s.id === first.id)).toMatchObject({
      app_name: 'Route Planner',
      developer_email: developer.email,
      status: 'submitted',
    });

    const inReview = await call(w, 'GET', '/v1/review/submissions?status=in_review', {
      token: reviewer.token,
    });
    expect(inReview.body.data.map((s: Json) => s.id)).toContain(second.id);
    expect(inReview.body.data.every((s: Json) => s.status === 'in_review')).toBe(true);
    const submitted = await call(w, 'GET', '/v1/review/submissions?status=submitted', {
      token: reviewer.token,
    });
    expect(submitted.body.data.map((s: Json) => s.id)).not.toContain(second.id);

    const pages: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = await call(
        w,
        'GET',
        `/v1/review/submissions?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
        { token: reviewer.token },
      );
      pages.push(...page.body.data.map((s: Json) => s.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(pages).toEqual(ids);
    const bad = await call(w, 'GET', '/v1/review/submissions?status=bogus', { token: reviewer.token });
    expect(bad.status).toBe(400);
  });

  it('shows a submission beside the live app, with what changes', async () => {
    const submission = await newSubmission({
      app: { name: 'Route Planner Pro', scopes: ['shipments:read'] },
      listing: listing(['shipments:read']),
    });
    const shown = await call(w, 'GET', `/v1/review/submissions/${submission.id}`, { token: reviewer.token });
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({
      id: submission.id,
      app: { name: 'Route Planner Pro', scopes: ['shipments:read'] },
      live: { name: 'Route Planner', scopes: ['shipments:read', 'webhooks:write'], status: 'private' },
      live_listing: null,
      changes: ['name', 'scopes'],
      developer: { email: developer.email },
      conflict: null,
    });
    expect(shown.body.checks).toHaveLength(4);
    const missing = await call(w, 'GET', '/v1/review/submissions/sub_missing', { token: reviewer.token });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('submission.not_found');
  });

  it('moves submitted -> in_review -> a decision, and refuses every other move', async () => {
    const submission = await newSubmission();
    const early = await decision(submission.id, { decision: 'approved' });
    expect(early.status).toBe(409);
    expect(early.body).toMatchObject({ code: 'submission.invalid_state', submission_status: 'submitted' });

    const started = await start(submission.id);
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ status: 'in_review', started_at: w.clock.now().toISOString() });
    const again = await start(submission.id);
    expect(again.status).toBe(409);

    for (const refused of ['rejected', 'changes_requested']) {
      const noNote = await decision(submission.id, { decision: refused });
      expect(noNote.status).toBe(400);
      expect(noNote.body.errors[0].path).toBe('/note');
    }
    const unknown = await decision(submission.id, { decision: 'maybe', note: 'x' });
    expect(unknown.status).toBe(400);

    const decided = await decision(submission.id, {
      decision: 'changes_requested',
      note: 'Explain why webhooks:write is needed.',
    });
    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({
      status: 'changes_requested',
      reviewer_note: 'Explain why webhooks:write is needed.',
      decided_at: w.clock.now().toISOString(),
    });
    for (const move of [start(submission.id), decision(submission.id, { decision: 'approved' })]) {
      const response = await move;
      expect(response.status).toBe(409);
      expect(response.body.code).toBe('submission.invalid_state');
    }
    // The developer reads the note.
    const list = await call(w, 'GET', `/v1/developer/apps/${submission.app_id}/submissions`, {
      token: developer.token,
    });
    expect(list.body.data[0]).toMatchObject({
      status: 'changes_requested',
      reviewer_note: 'Explain why webhooks:write is needed.',
    });
    // A rejected submission keeps the app private; a withdrawn one cannot be started.
    const rejected = await newSubmission();
    await start(rejected.id);
    expect((await decision(rejected.id, { decision: 'rejected', note: 'Not a real app.' })).body.status).toBe(
      'rejected',
    );
    const app = await call(w, 'GET', `/v1/developer/apps/${rejected.app_id}`, { token: developer.token });
    expect(app.body.status).toBe('private');
    const withdrawn = await newSubmission();
    await call(w, 'POST', `/v1/developer/apps/${withdrawn.app_id}/submissions/${withdrawn.id}/withdraw`, {
      token: developer.token,
    });
    expect((await start(withdrawn.id)).status).toBe(409);
  });

  it("refuses a reviewer's own app and their company's apps", async () => {
    const second = await signUpAs(w, REVIEWERS[1] as string, 'Second Reviewer');
    const own = await newSubmission({}, second);
    const refusedOwn = await start(own.id, second.token);
    expect(refusedOwn.status).toBe(403);
    expect(refusedOwn.body.detail).toContain('your own app');
    const shown = await call(w, 'GET', `/v1/review/submissions/${own.id}`, { token: second.token });
    expect(shown.body.conflict).toContain('your own app');

    // The reviewer and a developer in the same company.
    const company = await createCompany(w, 'Reviewer Co');
    const colleague = await signUpPerson(w, 'Colleague');
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: second.email, role: 'viewer' },
    });
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: colleague.email, role: 'member' },
    });
    const theirs = await newSubmission({}, colleague);
    expect((await start(theirs.id, second.token)).status).toBe(403);
    // Another reviewer can; the conflicted one cannot decide either.
    expect((await start(theirs.id)).status).toBe(200);
    const conflicted = await decision(theirs.id, { decision: 'approved' }, second.token);
    expect(conflicted.status).toBe(403);
    expect(conflicted.body.detail).toContain('your own company');
    expect((await decision(theirs.id, { decision: 'approved' })).status).toBe(200);
  });
});
