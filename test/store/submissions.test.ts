import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, SECOND } from '../../src/lib/clock.ts';
import { call, createCompany, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  JUSTIFICATIONS,
  listing,
  newKey,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signUpAs,
  startEventsReceiver,
  submit,
  submitAndDecide,
} from './support.ts';

let w: TestWaybill;
let developer: Person;
let reviewer: Person;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Store Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  receiver = await startEventsReceiver(() => 200);
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

async function submissionCount(appId: string): Promise<number> {
  const rows = await w.ctx.db
    .selectFrom('app_submissions')
    .select('id')
    .where('app_id', '=', appId)
    .execute();
  return rows.length;
}

/** Sessions last 14 days: after moving the clock far, people sign in again. */
async function signInAgain(...people: Person[]) {
  for (const person of people) {
    const session = await call(w, 'POST', '/v1/auth/sessions', {
      body: { email: person.email, password: 'correct horse battery' },
    });
    person.token = session.body.token;
  }
}

async function liveApp(appId: string): Promise<Json> {
  return (await call(w, 'GET', `/v1/developer/apps/${appId}`, { token: developer.token })).body;
}

describe('POST /v1/developer/apps/{id}/submissions', () => {
  it('requires an Idempotency-Key, and answers a repeat with the first answer', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const body = { listing: listing(app.scopes), note: 'First listing' };
    const missing = await submit(w, developer, app.id, body, null);
    expect(missing.status).toBe(400);
    expect(missing.headers['content-type']).toContain('application/problem+json');
    expect(missing.body).toMatchObject({
      code: 'validation.failed',
      errors: [{ path: 'headers:/idempotency-key', message: 'required' }],
    });
    expect(await submissionCount(app.id)).toBe(0);

    const key = newKey();
    const first = await submit(w, developer, app.id, body, key);
    expect(first.status, first.text).toBe(201);
    expect(first.body).toMatchObject({
      id: expect.stringMatching(/^sub_/),
      app_id: app.id,
      status: 'submitted',
      note: 'First listing',
      reviewer_note: null,
      decided_at: null,
      updates_published_app: false,
    });
    const again = await submit(w, developer, app.id, body, key);
    expect(again.status).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.id).toBe(first.body.id);
    const reused = await submit(w, developer, app.id, { ...body, note: 'Other' }, key);
    expect(reused.status).toBe(409);
    expect(reused.body.code).toBe('idempotency.key_reused');
    expect(await submissionCount(app.id)).toBe(1);
  });

  it('authenticates a person before looking at the body; other people’s apps do not exist', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const anonymous = await call(w, 'POST', `/v1/developer/apps/${app.id}/submissions`, { body: {} });
    expect(anonymous.status).toBe(401);
    const company = await createCompany(w);
    const apiToken = await call(w, 'POST', `/v1/developer/apps/${app.id}/submissions`, {
      token: company.liveToken,
      body: {},
    });
    expect(apiToken.status).toBe(403);
    expect(apiToken.body.code).toBe('auth.session_required');
    const stranger = await signUpPerson(w, 'Stranger');
    const foreign = await submit(w, stranger, app.id, { listing: listing(app.scopes) });
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('app.not_found');
  });

  it('names each missing URL, and takes them from the proposed values', async () => {
    const bare = await registerPublishable(w, developer, receiver.url, {
      privacy_url: null,
      support_url: null,
      events_url: null,
    });
    const refused = await submit(w, developer, bare.id, { listing: listing(bare.scopes) });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('submission.requirements_missing');
    expect(refused.body.errors.map((e: Json) => e.path)).toEqual([
      '/app/privacy_url',
      '/app/support_url',
      '/events_url',
    ]);
    expect(refused.body.detail).toContain('privacy URL, support URL, events URL');
    const onlyEvents = await submit(w, developer, bare.id, {
      listing: listing(bare.scopes),
      app: { privacy_url: 'https://route-planner.example/privacy', support_url: 'https://x.example/help' },
    });
    expect(onlyEvents.status).toBe(422);
    expect(onlyEvents.body.errors).toEqual([{ path: '/events_url', message: 'an events URL is required' }]);
    expect(await submissionCount(bare.id)).toBe(0);

    const proposed = await submit(w, developer, bare.id, {
      listing: listing(bare.scopes),
      app: { privacy_url: 'https://route-planner.example/privacy', support_url: 'https://x.example/help' },
      events_url: receiver.url,
    });
    expect(proposed.status, proposed.text).toBe(201);
    expect(proposed.body.app.privacy_url).toBe('https://route-planner.example/privacy');
    expect(proposed.body.events_url).toBe(receiver.url);
    // The live app stays as it was until a reviewer approves.
    expect(await liveApp(bare.id)).toMatchObject({ privacy_url: null, support_url: null, events_url: null });
  });

  it('refuses a listing that is not complete, naming the field and the scope', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const scopes: string[] = app.scopes;
    const justified = (overrides: Record<string, string>) =>
      scopes.map((scope) => ({ scope, justification: overrides[scope] ?? JUSTIFICATIONS[scope] }));
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [
        { scope_justifications: justified({ 'webhooks:write': 'Too short' }) },
        '/listing/scope_justifications/1/justification',
        /webhooks:write must be 20 to 300 characters \(it has 9\)/,
      ],
      [
        { scope_justifications: justified({ 'shipments:read': 'x'.repeat(301) }) },
        '/listing/scope_justifications/0/justification',
        /shipments:read must be 20 to 300 characters \(it has 301\)/,
      ],
      [
        { scope_justifications: justified({}).slice(0, 1) },
        '/listing/scope_justifications',
        /webhooks:write needs a justification/,
      ],
      [
        {
          scope_justifications: [
            ...justified({}),
            { scope: 'shipments:write', justification: JUSTIFICATIONS['shipments:write'] },
          ],
        },
        '/listing/scope_justifications/2/scope',
        /shipments:write is not a scope the app requests/,
      ],
      [{ category: 'toys' }, '/listing/category', /must be one of accounting, /],
      [{ app_url: 'http://route-planner.example/start' }, '/listing/app_url', /https/],
      [{ tagline: '   ' }, '/listing/tagline', /must not be empty/],
      [{ description_es: '' }, '/listing/description_es', /must not be empty/],
    ];
    for (const [change, path, message] of cases) {
      const response = await submit(w, developer, app.id, { listing: listing(scopes, change) });
      expect(response.status, JSON.stringify(change)).toBe(400);
      expect(response.body.code).toBe('validation.failed');
      expect(response.body.errors).toContainEqual({ path, message: expect.stringMatching(message) });
    }
    expect(await submissionCount(app.id)).toBe(0);

    // The limits themselves are allowed: 20 and 300 characters.
    const edges = await submit(w, developer, app.id, {
      listing: listing(scopes, {
        scope_justifications: justified({
          'shipments:read': 'y'.repeat(20),
          'webhooks:write': 'z'.repeat(300),
        }),
      }),
    });
    expect(edges.status, edges.text).toBe(201);
  });

  it('asks for justifications of the proposed scopes, and checks proposed values as PATCH does', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const proposedScopes = ['shipments:read', 'shipments:write'];
    const oldJustifications = await submit(w, developer, app.id, {
      listing: listing(app.scopes),
      app: { scopes: proposedScopes },
    });
    expect(oldJustifications.status).toBe(400);
    expect(oldJustifications.body.errors).toContainEqual({
      path: '/listing/scope_justifications',
      message: expect.stringContaining('shipments:write needs a justification'),
    });
    const badValues: Array<[Record<string, unknown>, number, string]> = [
      [{ app: { redirect_uris: ['http://route-planner.example/cb'] } }, 400, 'app.invalid_redirect_uri'],
      [{ app: { scopes: ['parcels:teleport'] } }, 400, 'app.invalid_scope'],
      [{ events_url: 'http://route-planner.example/events' }, 400, 'validation.failed'],
      [{ events_url: 'https://10.1.2.3/events' }, 422, 'app.events_url_not_allowed'],
      [{ events_url: 'https://169.254.169.254/latest' }, 422, 'app.events_url_not_allowed'],
      [{ app: { events_url: receiver.url } }, 400, 'validation.failed'],
      [{ app: { kind: 'public' } }, 400, 'validation.failed'],
    ];
    for (const [change, status, code] of badValues) {
      const response = await submit(w, developer, app.id, { listing: listing(proposedScopes), ...change });
      expect(response.status, JSON.stringify(change)).toBe(status);
      expect(response.body.code).toBe(code);
    }
    expect(await submissionCount(app.id)).toBe(0);

    const good = await submit(w, developer, app.id, {
      listing: listing(proposedScopes),
      app: { scopes: ['shipments:write', 'shipments:read'], name: '  Route Planner Pro ' },
    });
    expect(good.status, good.text).toBe(201);
    // The snapshot is the app as submitted: proposed values over the live ones, normalized.
    expect(good.body.app).toEqual({
      name: 'Route Planner Pro',
      description: app.description,
      homepage_url: app.homepage_url,
      privacy_url: app.privacy_url,
      support_url: app.support_url,
      redirect_uris: app.redirect_uris,
      scopes: ['shipments:read', 'shipments:write'],
    });
    expect(good.body.listing.scope_justifications.map((j: Json) => j.scope)).toEqual(proposedScopes);
    expect(await liveApp(app.id)).toMatchObject({ name: 'Route Planner', scopes: app.scopes });
  });

  it('keeps one waiting submission per app; withdraw frees the way and leaves the app as it was', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const body = { listing: listing(app.scopes), app: { name: 'Proposed Name' } };
    const first = await submit(w, developer, app.id, body);
    expect(first.status).toBe(201);
    const second = await submit(w, developer, app.id, body);
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ code: 'submission.already_pending', submission_id: first.body.id });

    const withdrawPath = (id: string) => `/v1/developer/apps/${app.id}/submissions/${id}/withdraw`;
    const withdrawn = await call(w, 'POST', withdrawPath(first.body.id), { token: developer.token });
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body.status).toBe('withdrawn');
    expect((await liveApp(app.id)).name).toBe('Route Planner');
    const twice = await call(w, 'POST', withdrawPath(first.body.id), { token: developer.token });
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('submission.invalid_state');

    // In review, it can still be withdrawn.
    w.clock.advance(SECOND);
    const third = await submit(w, developer, app.id, body);
    expect(third.status).toBe(201);
    await call(w, 'POST', `/v1/review/submissions/${third.body.id}/start`, { token: reviewer.token });
    const duringReview = await call(w, 'POST', withdrawPath(third.body.id), { token: developer.token });
    expect(duringReview.body.status).toBe('withdrawn');

    // After a decision, it cannot.
    w.clock.advance(SECOND);
    const decided = await submitAndDecide(w, developer, reviewer, app.id, body, 'changes_requested');
    const late = await call(w, 'POST', withdrawPath(decided.id), { token: developer.token });
    expect(late.status).toBe(409);
    expect(late.body.code).toBe('submission.invalid_state');
    const unknown = await call(w, 'POST', withdrawPath('sub_nothing'), { token: developer.token });
    expect(unknown.status).toBe(404);
    expect(unknown.body.code).toBe('submission.not_found');

    const list = await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions`, { token: developer.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: Json) => s.status)).toEqual([
      'changes_requested',
      'withdrawn',
      'withdrawn',
    ]);
    expect(list.body.data[0]).toMatchObject({
      reviewer_note: 'Looked at everything listed.',
      checks: expect.arrayContaining([expect.objectContaining({ name: 'scope_justifications_complete' })]),
    });
    const paged = await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions?limit=2`, {
      token: developer.token,
    });
    expect(paged.body.data).toHaveLength(2);
    const rest = await call(
      w,
      'GET',
      `/v1/developer/apps/${app.id}/submissions?limit=2&cursor=${paged.body.next_cursor}`,
      { token: developer.token },
    );
    expect(rest.body.data.map((s: Json) => s.id)).toEqual([list.body.data[2].id]);
  });
});

describe('rejections', () => {
  it('after 3 rejections within 90 days, new submissions wait 30 days from the third', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const body = { listing: listing(app.scopes) };
    await submitAndDecide(w, developer, reviewer, app.id, body, 'rejected', 'Privacy policy is empty.');
    w.clock.advance(40 * DAY);
    await signInAgain(developer, reviewer);
    await submitAndDecide(w, developer, reviewer, app.id, body, 'rejected', 'Still empty.');
    w.clock.advance(40 * DAY);
    await signInAgain(developer, reviewer);
    const thirdAt = w.clock.now();
    await submitAndDecide(w, developer, reviewer, app.id, body, 'rejected', 'No.');

    const opensAt = new Date(thirdAt.getTime() + 30 * DAY).toISOString();
    const waiting = await submit(w, developer, app.id, body);
    expect(waiting.status).toBe(429);
    expect(waiting.body).toMatchObject({ code: 'submission.cooling_down', opens_at: opensAt });
    expect(waiting.body.detail).toContain(opensAt);
    expect(Number(waiting.headers['retry-after'])).toBe(30 * 24 * 3600);

    w.clock.advance(30 * DAY - SECOND);
    await signInAgain(developer, reviewer);
    const almost = await submit(w, developer, app.id, body);
    expect(almost.status).toBe(429);
    expect(await submissionCount(app.id)).toBe(3);
    w.clock.advance(SECOND);
    const open = await submit(w, developer, app.id, body);
    expect(open.status, open.text).toBe(201);
  });

  it('3 rejections spread over more than 90 days do not make anyone wait', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const body = { listing: listing(app.scopes) };
    await submitAndDecide(w, developer, reviewer, app.id, body, 'rejected', 'One.');
    w.clock.advance(50 * DAY);
    await signInAgain(developer, reviewer);
    await submitAndDecide(w, developer, reviewer, app.id, body, 'rejected', 'Two.');
    w.clock.advance(41 * DAY);
    await signInAgain(developer, reviewer);
    await submitAndDecide(w, developer, reviewer, app.id, body, 'rejected', 'Three, 91 days after one.');
    const open = await submit(w, developer, app.id, body);
    expect(open.status, open.text).toBe(201);
  });
});
