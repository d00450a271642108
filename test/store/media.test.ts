import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type Json, type Person, signUpPerson } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { jpegWithExif, noisePng, png, pngBomb, SVG } from './images.ts';
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
let stranger: Person;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;

/** A real HTTP request with a raw body, as a developer's script or browser sends it. */
async function upload(
  app: Json,
  what: 'icon' | 'screenshots',
  bytes: Buffer,
  contentType = 'application/octet-stream',
  token = developer.token,
) {
  const response = await fetch(`${w.url}/v1/developer/apps/${app.id}/listing-media/${what}`, {
    method: what === 'icon' ? 'PUT' : 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
    body: new Uint8Array(bytes),
  });
  return { status: response.status, body: (await response.json()) as Json };
}

async function fetchImage(url: string, token?: string) {
  const response = await fetch(url, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  return {
    status: response.status,
    type: response.headers.get('content-type'),
    cache: response.headers.get('cache-control'),
    bytes: Buffer.from(await response.arrayBuffer()),
  };
}

async function storedCount(appId: string): Promise<number> {
  const row = await w.ctx.db
    .selectFrom('listing_media')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('app_id', '=', appId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Media Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  stranger = await signUpPerson(w, 'Someone Else');
  receiver = await startEventsReceiver((m) => (m.headers['webhook-signature'] ? 200 : 400));
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

describe('listing media', () => {
  it('goes from upload through review to the store, stripped of metadata and cached for a year', async () => {
    const app = await registerPublishable(w, developer, receiver.url, { name: 'Pictured App' });
    const icon = await upload(app, 'icon', await jpegWithExif(512, 512), 'image/jpeg');
    expect(icon.status).toBe(200);
    expect(icon.body.icon.name).toMatch(/^icon-[0-9a-f]{32}\.jpg$/);
    const first = await upload(app, 'screenshots', await png(1280, 720), 'image/png');
    expect(first.status).toBe(201);
    const second = await upload(app, 'screenshots', await png(1920, 1080, '#22aa55'));
    expect(second.body.screenshots).toHaveLength(2);

    // The stored icon is a JPEG without the EXIF it arrived with.
    const draftIcon = await fetchImage(icon.body.icon.url, developer.token);
    expect(draftIcon.status).toBe(200);
    expect(draftIcon.type).toBe('image/jpeg');
    const meta = await sharp(draftIcon.bytes).metadata();
    expect(meta.exif).toBeUndefined();
    expect(draftIcon.bytes.includes(Buffer.from('Secret Camera'))).toBe(false);
    expect(draftIcon.cache).toBe('private, max-age=31536000, immutable');
    // Not published yet: nobody else sees it.
    expect((await fetchImage(icon.body.icon.url)).status).toBe(404);
    expect((await fetchImage(icon.body.icon.url, stranger.token)).status).toBe(404);

    const submitted = await submit(w, developer, app.id, { listing: listing(app.scopes) });
    expect(submitted.status).toBe(201);
    const check = submitted.body.checks.find((c: Json) => c.name === 'listing_media_valid');
    expect(check.passed).toBe(true);
    expect(check.detail.media.map((m: Json) => [m.kind, m.width, m.height])).toEqual(
      expect.arrayContaining([
        ['icon', 512, 512],
        ['screenshot', 1280, 720],
        ['screenshot', 1920, 1080],
      ]),
    );
    expect(submitted.body.media.screenshots.map((s: Json) => s.name)).toEqual(
      second.body.screenshots.map((s: Json) => s.name),
    );

    // The reviewer sees the submission's images beside the published ones (none yet) and can open them.
    const seen = await call(w, 'GET', `/v1/review/submissions/${submitted.body.id}`, {
      token: reviewer.token,
    });
    expect(seen.body.media.icon.name).toBe(icon.body.icon.name);
    expect(seen.body.live_media).toEqual({ icon: null, screenshots: [] });
    expect((await fetchImage(seen.body.media.screenshots[0].url, reviewer.token)).status).toBe(200);
    await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/start`, { token: reviewer.token });
    const decided = await call(w, 'POST', `/v1/review/submissions/${submitted.body.id}/decision`, {
      token: reviewer.token,
      body: { decision: 'approved' },
    });
    expect(decided.status).toBe(200);

    const store = await call(w, 'GET', `/v1/store/apps/${app.id}`, { token: stranger.token });
    expect(store.body.icon_url).toBe(icon.body.icon.url);
    expect(store.body.screenshots.map((s: Json) => s.url)).toEqual(
      second.body.screenshots.map((s: Json) => s.url),
    );
    const served = await fetchImage(store.body.icon_url);
    expect(served.status).toBe(200);
    expect(served.cache).toBe('public, max-age=31536000, immutable');
    expect(served.bytes.equals(draftIcon.bytes)).toBe(true);

    // A new icon waits for the next review: the store keeps serving the approved one.
    const next = await upload(app, 'icon', await png(256, 256, '#aa2222'), 'image/png');
    expect(next.body.icon.name).not.toBe(icon.body.icon.name);
    expect((await fetchImage(next.body.icon.url)).status).toBe(404);
    const again = await call(w, 'GET', `/v1/store/apps/${app.id}`, { token: stranger.token });
    expect(again.body.icon_url).toBe(icon.body.icon.url);
  });

  it('fails the listing_media_valid check without an icon and a screenshot', async () => {
    const app = await registerPublishable(w, developer, receiver.url, { name: 'Bare App' });
    const submitted = await submit(w, developer, app.id, { listing: listing(app.scopes) });
    const check = submitted.body.checks.find((c: Json) => c.name === 'listing_media_valid');
    expect(check.passed).toBe(false);
    expect(check.detail.problems).toEqual(['no icon was uploaded', 'no screenshot was uploaded']);
  });

  it('refuses what the listing does not take with listing_media.invalid, and stores nothing', async () => {
    const app = await registerPublishable(w, developer, receiver.url, { name: 'Refused App' });
    const truncatedSource = await png(1280, 720);
    const refusals: Array<[string, 'icon' | 'screenshots', Buffer, string, RegExp]> = [
      ['wrong ratio', 'screenshots', await png(1280, 1000), 'image/png', /16:9/],
      ['not square', 'icon', await png(512, 400), 'image/png', /square/],
      ['too small', 'icon', await png(128, 128), 'image/png', /256 to 1024/],
      ['PNG named JPEG', 'screenshots', await png(1280, 720), 'image/jpeg', /PNG.*image\/jpeg/],
      ['3 MB screenshot', 'screenshots', await noisePng(1366, 768), 'image/png', /2 MB at most/],
      ['SVG', 'icon', SVG, 'image/svg+xml', /svg.*PNG or a JPEG/],
      ['truncated', 'screenshots', truncatedSource.subarray(0, 30000), 'image/png', /damaged|not an image/],
      ['decompression bomb', 'icon', pngBomb(), 'image/png', /256 to 1024|not an image/],
      ['text', 'icon', Buffer.from('hello, not a picture'), 'text/plain', /not an image/],
      ['empty', 'icon', Buffer.alloc(0), 'image/png', /empty/],
    ];
    for (const [what, kind, bytes, type, detail] of refusals) {
      const response = await upload(app, kind, bytes, type);
      expect(response.status, what).toBe(422);
      expect(response.body.code, what).toBe('listing_media.invalid');
      expect(response.body.detail, what).toMatch(detail);
    }
    expect(await storedCount(app.id)).toBe(0);
    const draft = await call(w, 'GET', `/v1/developer/apps/${app.id}/listing-media`, {
      token: developer.token,
    });
    expect(draft.body).toEqual({ icon: null, screenshots: [] });
  });

  it('takes six screenshots at most, removes one, and keeps uploads to the app’s developer', async () => {
    const app = await registerPublishable(w, developer, receiver.url, { name: 'Six Shots' });
    for (let i = 0; i < 6; i++) {
      expect((await upload(app, 'screenshots', await png(1280, 720, `#00${i}0${i}0`))).status).toBe(201);
    }
    const seventh = await upload(app, 'screenshots', await png(1280, 720, '#777777'));
    expect(seventh.status).toBe(422);
    expect(seventh.body.detail).toMatch(/at most 6/);
    const draft = await call(w, 'GET', `/v1/developer/apps/${app.id}/listing-media`, {
      token: developer.token,
    });
    const removed = draft.body.screenshots[2].name;
    const gone = await call(
      w,
      'DELETE',
      `/v1/developer/apps/${app.id}/listing-media/screenshots/${removed}`,
      {
        token: developer.token,
      },
    );
    expect(gone.status).toBe(204);
    const after = await call(w, 'GET', `/v1/developer/apps/${app.id}/listing-media`, {
      token: developer.token,
    });
    expect(after.body.screenshots.map((s: Json) => s.name)).not.toContain(removed);
    expect(after.body.screenshots).toHaveLength(5);

    const foreign = await upload(app, 'icon', await png(256, 256), 'image/png', stranger.token);
    expect(foreign.status).toBe(404);
    const anonymous = await fetch(`${w.url}/v1/developer/apps/${app.id}/listing-media/icon`, {
      method: 'PUT',
      headers: { 'content-type': 'image/png' },
      body: new Uint8Array(await png(256, 256)),
    });
    expect(anonymous.status).toBe(401);
  });
});
