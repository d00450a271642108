import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEMO_PASSWORD, DEMO_PEOPLE, seedDemo } from '../../src/seed.ts';
import { consent, discover, insecure, signedInJar } from '../oauth/support.ts';
import { call, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;
beforeAll(async () => {
  w = await startWaybill({ env: { WAYBILL_REVIEWER_EMAILS: DEMO_PEOPLE.reviewer.email } });
});
afterAll(async () => {
  await w?.close();
});

async function signIn(email: string) {
  const session = await call(w, 'POST', '/v1/auth/sessions', { body: { email, password: DEMO_PASSWORD } });
  return { id: session.body.user.id as string, email, token: session.body.token as string };
}

it("walks the README's store step: the reviewer approves, the owner finds the app and installs it", async () => {
  const seed = await seedDemo(w.ctx);
  const text = seed?.lines.join('\n') ?? '';
  const owner = await signIn(DEMO_PEOPLE.owner.email);
  const reviewer = await signIn(DEMO_PEOPLE.reviewer.email);

  // The store opens with one published app, listed in both languages.
  const english = await call(w, 'GET', '/v1/store/apps', { token: owner.token });
  expect(english.body.data.map((a: Json) => a.name)).toEqual(['Parcel Notifier']);
  const spanish = await call(w, 'GET', '/v1/store/apps?lang=es', { token: owner.token });
  expect(spanish.body.data[0]).toMatchObject({
    lang: 'es',
    description: expect.stringContaining('destinatarios'),
  });

  // The published app has its icon, screenshots and a few reviews, one answered by the developer.
  const notifier = english.body.data[0];
  expect(notifier.icon_url).toMatch(/\/media\/icon-[0-9a-f]{32}\.png$/);
  expect(notifier.screenshots).toHaveLength(2);
  expect(notifier).toMatchObject({ review_count: 3, rating_avg: 4 });
  const icon = await w.app.inject({ method: 'GET', url: new URL(notifier.icon_url).pathname });
  expect(icon.statusCode).toBe(200);
  expect(icon.headers['content-type']).toBe('image/png');
  const reviews = await call(w, 'GET', `/v1/store/apps/${notifier.id}/reviews`, { token: owner.token });
  expect(reviews.body.data).toHaveLength(3);
  expect(reviews.body.data.filter((r: Json) => r.reply !== null)).toHaveLength(1);
  // The demo company has used it for ten days: its owner may write the fourth review.
  const written = await call(w, 'POST', `/v1/store/apps/${notifier.id}/reviews`, {
    token: owner.token,
    body: { rating: 5, body: 'Tried it in the tour.' },
  });
  expect(written.status).toBe(201);

  // As the reviewer, approve the waiting submission.
  const queue = await call(w, 'GET', '/v1/review/submissions', { token: reviewer.token });
  expect(queue.body.data).toHaveLength(1);
  const waiting = queue.body.data[0];
  expect(waiting).toMatchObject({ app_name: 'Demo Carrier Sync', status: 'submitted' });
  expect(waiting.checks.map((c: Json) => c.name)).toEqual([
    'events_url_rejects_bad_signature',
    'events_url_accepts_signed_test',
    'scope_justifications_complete',
    'listing_media_valid',
  ]);
  expect(waiting.checks.find((c: Json) => c.name === 'listing_media_valid').passed).toBe(true);
  expect(waiting.media.screenshots).toHaveLength(2);
  expect(
    (await call(w, 'POST', `/v1/review/submissions/${waiting.id}/start`, { token: reviewer.token })).status,
  ).toBe(200);
  const approved = await call(w, 'POST', `/v1/review/submissions/${waiting.id}/decision`, {
    token: reviewer.token,
    body: { decision: 'approved', note: 'Approved in the tour.' },
  });
  expect(approved.body.status).toBe('approved');

  // As the owner, find it in the App Store and install it from the start link the seed printed.
  const found = await call(w, 'GET', '/v1/store/apps?q=carrier', { token: owner.token });
  expect(found.body.data).toHaveLength(1);
  expect(found.body.data[0]).toMatchObject({ name: 'Demo Carrier Sync', installed: false });
  const clientId = /client id\s+(app_\S+)/.exec(text)?.[1] as string;
  const clientSecret = /client secret\s+(aps_\S+)/.exec(text)?.[1] as string;
  const start = new URL(/install \(demo\)\s+(\S+)/.exec(text)?.[1] as string);
  const verifier = /code verifier\s+(\S+)/.exec(text)?.[1] as string;
  expect(start.searchParams.get('client_id')).toBe(clientId);
  const jar = await signedInJar(w, owner);
  const page = await (await jar.fetch(`/oauth/authorize?${start.searchParams}`)).text();
  expect(page).toContain('Why: Reads confirmed shipments to book their pickup with your carrier.');
  const location = await consent(jar, { verifier, state: 'demo', query: start.searchParams });
  const as = await discover(w);
  const client = { client_id: clientId };
  const params = oauth.validateAuthResponse(as, client, location, 'demo');
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic(clientSecret),
      params,
      'http://localhost:8080/callback',
      verifier,
      insecure,
    ),
  );
  expect((await call(w, 'GET', '/v1/shipments', { token: tokens.access_token })).status).toBe(200);
  const installed = await call(w, 'GET', `/v1/store/apps/${clientId}`, { token: owner.token });
  expect(installed.body.installed).toBe(true);
});
