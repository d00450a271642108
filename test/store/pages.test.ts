import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { install } from '../apps/fixtures.ts';
import {
  type CompanyFixture,
  call,
  createCompany,
  type Json,
  type Person,
  signUpPerson,
} from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { PageClient } from '../web/page-client.ts';
import {
  JUSTIFICATIONS,
  listing,
  REVIEWERS,
  registerPublishable,
  reviewerEnv,
  signUpAs,
  startEventsReceiver,
  submit,
  submitAndDecide,
  verifyingReceiver,
} from './support.ts';

let w: TestWaybill;
let developer: Person;
let reviewer: Person;
let company: CompanyFixture;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Page Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Page Reviewer');
  company = await createCompany(w, 'Page Company');
  receiver = await startEventsReceiver(() => 200);
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

/** A browser holding the person's session (the sign-in page itself is tested elsewhere). */
function browserOf(person: Person): PageClient {
  const client = new PageClient(w);
  client.cookies.set('waybill_session', person.token);
  return client;
}

function formFor(app: Json, overrides: Record<string, string | string[]> = {}) {
  const form: Record<string, string | string[]> = {
    tagline: 'Routes in one click',
    category: 'shipping',
    app_url: 'https://route-planner.example/start',
    description_en: 'Plans your routes.',
    description_es: 'Planifica tus rutas.',
    name: app.name,
    description: app.description,
    homepage_url: app.homepage_url ?? '',
    privacy_url: app.privacy_url ?? '',
    support_url: app.support_url ?? '',
    redirect_uris: app.redirect_uris.join('\r\n'),
    scopes: app.scopes,
    events_url: app.events_url ?? '',
    note: 'Please have a look',
  };
  for (const scope of app.scopes) form[`justification_${scope}`] = JUSTIFICATIONS[scope] as string;
  return { ...form, ...overrides };
}

describe('developer portal: App Store pages', () => {
  it('submits through the form, shows the history with checks, and withdraws', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const browser = browserOf(developer);
    const detail = await browser.get(`/developer/apps/${app.id}`);
    expect(detail.text).toContain(`href="/developer/apps/${app.id}/submissions"`);
    const history = await browser.get(`/developer/apps/${app.id}/submissions`);
    expect(history.status).toBe(200);
    expect(history.text).toContain('Submit to the App Store');
    expect(history.text).toContain('Nothing submitted yet.');

    const form = await browser.get(`/developer/apps/${app.id}/submissions/new`);
    expect(form.status).toBe(200);
    expect(form.text).toContain('<script src="/static/submission-form.js" defer></script>');
    expect(form.text).toContain('<option value="notifications">Notifications and tracking</option>');
    expect(form.text).toContain('Descripción en español');
    expect(form.text).toContain(
      'id="count-shipments-read" aria-live="polite">0 / 300 characters (at least 20)',
    );
    const script = await browser.get('/static/submission-form.js');
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toContain('javascript');
    expect(form.headers.get('content-security-policy')).toContain("script-src 'self'");

    const forged = await browser.request('POST', `/developer/apps/${app.id}/submissions`, {
      ...formFor(app),
      _csrf: 'forged',
    });
    expect(forged.status).toBe(403);
    const short = await browser.post(
      `/developer/apps/${app.id}/submissions`,
      formFor(app, { 'justification_webhooks:write': 'Because.' }),
    );
    expect(short.status).toBe(400);
    expect(short.text).toContain(
      'the justification of webhooks:write must be 20 to 300 characters (it has 8)',
    );
    expect(short.text).toContain('Planifica tus rutas.');
    expect(short.text).toContain('8 / 300 characters (at least 20)');

    const sent = await browser.post(`/developer/apps/${app.id}/submissions`, formFor(app));
    const after = await browser.follow(sent);
    expect(after.text).toContain('Submitted for review');
    expect(after.text).toContain('<span class="badge ">submitted</span>');
    expect(after.text).toContain('Events URL accepts a signed test message');
    expect(after.text).toContain('A submission is waiting for review');
    const [submission] = (
      await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions`, { token: developer.token })
    ).body.data;
    expect(submission).toMatchObject({ status: 'submitted', note: 'Please have a look' });
    // Nothing proposed: the form sent the live values, so `app` equals the live app.
    expect(submission.app.name).toBe(app.name);

    const withdrawn = await browser.follow(
      await browser.post(`/developer/apps/${app.id}/submissions/${submission.id}/withdraw`, {}),
    );
    expect(withdrawn.text).toContain('The submission was withdrawn');
    expect(withdrawn.text).toContain('<span class="badge ">withdrawn</span>');
    const again = await browser.post(`/developer/apps/${app.id}/submissions/${submission.id}/withdraw`, {});
    expect(again.status).toBe(409);
    expect(again.text).toContain('A withdrawn submission cannot be withdrawn');
  });

  it('proposes changed values from the form as an update of a published app', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    await submitAndDecide(w, developer, reviewer, app.id, { listing: listing(app.scopes) }, 'approved');
    const browser = browserOf(developer);
    const history = await browser.get(`/developer/apps/${app.id}/submissions`);
    expect(history.text).toContain('Submit an update');
    expect(history.text).toContain('Unpublish');
    const form = await browser.get(`/developer/apps/${app.id}/submissions/new`);
    // The last listing fills the form again.
    expect(form.text).toContain('value="Delivery routes in one click"');
    w.clock.advance(1000);
    const sent = await browser.post(
      `/developer/apps/${app.id}/submissions`,
      formFor(app, {
        name: 'Route Planner Deluxe',
        scopes: ['shipments:read', 'shipments:write', 'webhooks:write'],
        'justification_shipments:write': JUSTIFICATIONS['shipments:write'] as string,
      }),
    );
    expect(sent.status, sent.text.slice(0, 400)).toBe(303);
    const [update] = (
      await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions`, { token: developer.token })
    ).body.data;
    expect(update).toMatchObject({
      updates_published_app: true,
      app: { name: 'Route Planner Deluxe', scopes: ['shipments:read', 'shipments:write', 'webhooks:write'] },
    });
    const live = await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token });
    expect(live.body.name).toBe(app.name);

    // Unpublishing asks first on its own page; the first click changes nothing.
    const question = await browser.get(`/developer/apps/${app.id}/unpublish`);
    expect(question.text).toContain(`Unpublish ${app.name}?`);
    expect(
      (await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token })).body.status,
    ).toBe('published');
    const unpublished = await browser.follow(
      await browser.post(`/developer/apps/${app.id}/unpublish`, { confirmed: 'yes' }),
    );
    expect(unpublished.text).toContain('The app is private now');
  });

  it('"Check my events URL" shows what was sent and what came back', async () => {
    const secret = { value: '' };
    const verifying = await verifyingReceiver(w, () => secret.value);
    const app = await registerPublishable(w, developer, verifying.url);
    secret.value = app.events_secret;
    const browser = browserOf(developer);
    await browser.get(`/developer/apps/${app.id}/submissions`);
    const checked = await browser.post(`/developer/apps/${app.id}/events-url-checks`, {});
    expect(checked.status).toBe(200);
    expect(checked.text).toContain('Your events URL passed both message checks.');
    expect(checked.text).toContain('webhook-event: app.uninstalled');
    expect(checked.text).toContain('Answer 401');
    expect(checked.text).toContain('Answer 200');
    secret.value = 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=';
    const failing = await browser.post(`/developer/apps/${app.id}/events-url-checks`, {});
    expect(failing.text).toContain('Your events URL failed a check');
    await verifying.close();
    expect(
      (await call(w, 'GET', `/v1/developer/apps/${app.id}/submissions`, { token: developer.token })).body
        .data,
    ).toEqual([]);
  });

  it("another person's app is a 404 page; signed out goes to sign in", async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const stranger = browserOf(await signUpPerson(w, 'Stranger'));
    expect((await stranger.get(`/developer/apps/${app.id}/submissions`)).status).toBe(404);
    expect((await stranger.get(`/developer/apps/${app.id}/submissions/new`)).status).toBe(404);
    const out = await new PageClient(w).get(`/developer/apps/${app.id}/submissions`);
    expect(out.status).toBe(303);
    expect(out.location).toContain('/signin?return_to=');
  });
});

describe('review console', () => {
  it('refuses a person who is not a reviewer on every page and form', async () => {
    const app = await registerPublishable(w, developer, receiver.url);
    const submitted = await submit(w, developer, app.id, { listing: listing(app.scopes) });
    const id = submitted.body.id;
    for (const person of [developer, company.owner]) {
      const browser = browserOf(person);
      for (const path of ['/review', '/review?status=approved', `/review/submissions/${id}`]) {
        const response = await browser.get(path);
        expect(response.status, path).toBe(403);
        expect(response.text).toContain('Only reviewers of the App Store can do this');
      }
      await browser.get('/developer/apps');
      expect((await browser.post(`/review/submissions/${id}/start`, {})).status).toBe(403);
      expect(
        (await browser.post(`/review/submissions/${id}/decision`, { decision: 'approved' })).status,
      ).toBe(403);
    }
    const owner = await browserOf(company.owner).get('/dashboard/shipments');
    expect(owner.text).not.toContain('href="/review"');
    const signedOut = await new PageClient(w).get('/review');
    expect(signedOut.status).toBe(303);
    const row = await w.ctx.db
      .selectFrom('app_submissions')
      .select('status')
      .where('id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.status).toBe('submitted');
  });

  it('takes a reviewer from the queue through start and approval', async () => {
    const app = await registerPublishable(w, developer, receiver.url, { name: 'Console App' });
    const submitted = await submit(w, developer, app.id, {
      listing: listing(app.scopes),
      app: { name: 'Console App Renamed' },
      note: 'First time here',
    });
    const id = submitted.body.id;
    const browser = browserOf(reviewer);
    const queue = await browser.get('/review');
    expect(queue.status).toBe(200);
    expect(queue.text).toContain(`href="/review/submissions/${id}"`);
    expect(queue.text).toContain(developer.email);
    const page = await browser.get(`/review/submissions/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toMatch(
      /<tr class="changed"><th scope="row">Name <span class="badge">changes<\/span><\/th>\s*<td class="pre">Console App Renamed<\/td><td class="pre">Console App<\/td>/,
    );
    expect(page.text).toContain(JUSTIFICATIONS['webhooks:write']);
    expect(page.text).toContain('First time here');
    expect(page.text).toContain('Start review');
    // Suspending asks first, on a page of its own (CONTRACT.md, "The dashboard's manners").
    expect(page.text).toMatch(
      /href="\/review\/apps\/app_[A-Za-z0-9]+\/suspend\?submission_id=sub_[A-Za-z0-9]+"/,
    );

    const started = await browser.follow(await browser.post(`/review/submissions/${id}/start`, {}));
    expect(started.text).toContain('Review started');
    expect(started.text).toContain('Record the decision');
    const noNote = await browser.post(`/review/submissions/${id}/decision`, {
      decision: 'rejected',
      note: '',
    });
    expect(noNote.status).toBe(400);
    expect(noNote.text).toContain('a rejection or a request for changes needs a note');
    const approved = await browser.follow(
      await browser.post(`/review/submissions/${id}/decision`, { decision: 'approved', note: 'Welcome.' }),
    );
    expect(approved.text).toContain('Decision recorded');
    const live = await call(w, 'GET', `/v1/developer/apps/${app.id}`, { token: developer.token });
    expect(live.body).toMatchObject({ status: 'published', name: 'Console App Renamed' });
    const late = await browser.post(`/review/submissions/${id}/start`, {});
    expect(late.status).toBe(409);
    expect(late.text).toContain('The submission is approved, not submitted');
    const approvedTab = await browser.get('/review?status=approved');
    expect(approvedTab.text).toContain(`href="/review/submissions/${id}"`);
  });

  it('shows a reviewer why they may not review their own app, without the forms', async () => {
    const own = await registerPublishable(w, reviewer, receiver.url);
    const submitted = await submit(w, reviewer, own.id, { listing: listing(own.scopes) });
    const browser = browserOf(reviewer);
    const page = await browser.get(`/review/submissions/${submitted.body.id}`);
    expect(page.text).toContain('You cannot review your own app.');
    expect(page.text).not.toContain('Start review');
    const forced = await browser.post(`/review/submissions/${submitted.body.id}/start`, {});
    expect(forced.status).toBe(403);
  });
});

describe('the App Store in the dashboard', () => {
  it('lists published apps for the company, in both languages, with Install opening app_url', async () => {
    const app = await registerPublishable(w, developer, receiver.url, { name: 'Dashboard Listed' });
    await submitAndDecide(w, developer, reviewer, app.id, { listing: listing(app.scopes) }, 'approved');
    const hidden = await registerPublishable(w, developer, receiver.url, { name: 'Dashboard Hidden' });
    const browser = browserOf(company.owner);
    const list = await browser.get('/dashboard/store');
    expect(list.status).toBe(200);
    expect(list.text).toContain('href="/dashboard/store" aria-current="page"');
    expect(list.text).toContain('Dashboard Listed');
    expect(list.text).not.toContain(hidden.name);
    expect((await browser.get('/dashboard/store?q=nothing-like-it')).text).toContain(
      'No published app matches.',
    );

    const english = await browser.get(`/dashboard/store/${app.id}`);
    expect(english.text).toContain('Route Planner turns the day’s shipments');
    expect(english.text).toContain(`Why: ${JUSTIFICATIONS['shipments:read']}`);
    expect(english.text).toContain(
      'href="https://route-planner.example/start" target="_blank" rel="noopener noreferrer">Install',
    );
    expect(english.text).toContain('href="https://route-planner.example/privacy"');
    const spanish = await browser.get(`/dashboard/store/${app.id}?lang=es`);
    expect(spanish.text).toContain('convierte los envíos del día');
    expect(spanish.text).toContain('Por qué:');
    expect(spanish.text).toContain('Instalar');

    await install(w, { appId: app.id, tenantId: company.tenantId, userId: company.owner.id });
    expect((await browser.get('/dashboard/store')).text).toContain('<span class="badge ok">Installed</span>');

    const viewer = await signUpPerson(w, 'Viewer');
    await call(w, 'POST', `/v1/companies/${company.tenantId}/members`, {
      token: company.owner.token,
      body: { email: viewer.email, role: 'viewer' },
    });
    const asViewer = await browserOf(viewer).get(`/dashboard/store/${app.id}`);
    expect(asViewer.text).toContain('Only owners, admins and merchant admins install apps');
    expect((await browser.get(`/dashboard/store/${hidden.id}`)).status).toBe(404);
  });
});
