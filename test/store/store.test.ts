import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECOND } from '../../src/lib/clock.ts';
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
import {
  listing,
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
let company: CompanyFixture;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;
const apps: Record<string, Json> = {};

async function publish(name: string, category: string, descriptions: { en: string; es: string }) {
  const app = await registerPublishable(w, developer, receiver.url, { name });
  await submitAndDecide(
    w,
    developer,
    reviewer,
    app.id,
    {
      listing: listing(app.scopes, {
        category,
        tagline: `${name} tagline`,
        description_en: descriptions.en,
        description_es: descriptions.es,
      }),
    },
    'approved',
  );
  w.clock.advance(SECOND);
  return app;
}

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Store Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  company = await createCompany(w, 'Shopping Company');
  receiver = await startEventsReceiver(() => 200);
  apps.labels = await publish('Label Printer', 'shipping', {
    en: 'Prints shipping labels.',
    es: 'Imprime etiquetas de envío.',
  });
  apps.books = await publish('Books 100% Sync', 'accounting', {
    en: 'Sends invoices to your books.',
    es: 'Envía las facturas a tu contabilidad.',
  });
  apps.notify = await publish('Notify Me', 'notifications', {
    en: 'Texts recipients when parcels move.',
    es: 'Avisa por SMS cuando se mueven los paquetes.',
  });
  // Not in the store: a private app, an app whose submission waits, an unpublished app.
  apps.private = await registerPublishable(w, developer, receiver.url, { name: 'Private Tool' });
  apps.waiting = await registerPublishable(w, developer, receiver.url, { name: 'Waiting Tool' });
  await submit(w, developer, apps.waiting.id, { listing: listing(apps.waiting.scopes) });
  apps.gone = await publish('Gone Tool', 'shipping', { en: 'Gone.', es: 'Ido.' });
  await call(w, 'POST', `/v1/developer/apps/${apps.gone.id}/unpublish`, { token: developer.token });
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

const store = (query = '', token = company.owner.token) =>
  call(w, 'GET', `/v1/store/apps${query}`, { token });

describe('GET /v1/store/apps', () => {
  it('lists only published apps, newest first, in English by default', async () => {
    const listed = await store();
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((a: Json) => a.name)).toEqual([
      'Notify Me',
      'Books 100% Sync',
      'Label Printer',
    ]);
    expect(listed.body.data[2]).toMatchObject({
      id: apps.labels.id,
      tagline: 'Label Printer tagline',
      description: 'Prints shipping labels.',
      lang: 'en',
      category: 'shipping',
      category_label: 'Shipping and carriers',
      app_url: 'https://route-planner.example/start',
      privacy_url: 'https://route-planner.example/privacy',
      support_url: 'https://route-planner.example/support',
      installed: false,
      scopes: [
        {
          scope: 'shipments:read',
          description: 'See your shipments and their status',
          justification: expect.stringContaining('Reads your shipments'),
        },
        expect.objectContaining({ scope: 'webhooks:write' }),
      ],
    });
    const next = await store('?limit=2');
    expect(next.body.data).toHaveLength(2);
    const rest = await store(`?limit=2&cursor=${next.body.next_cursor}`);
    expect(rest.body.data.map((a: Json) => a.name)).toEqual(['Label Printer']);
    expect(rest.body.next_cursor).toBeNull();
  });

  it('speaks Spanish when asked, falling back to English where there is no Spanish text', async () => {
    const spanish = await store('?lang=es');
    expect(spanish.body.data.map((a: Json) => [a.description, a.lang])).toEqual([
      ['Avisa por SMS cuando se mueven los paquetes.', 'es'],
      ['Envía las facturas a tu contabilidad.', 'es'],
      ['Imprime etiquetas de envío.', 'es'],
    ]);
    expect(spanish.body.data[2].category_label).toBe('Envíos y transportistas');
    await w.ctx.db
      .updateTable('store_listings')
      .set({ description_es: ' ' })
      .where('app_id', '=', apps.notify.id)
      .execute();
    const fallback = await call(w, 'GET', `/v1/store/apps/${apps.notify.id}?lang=es`, {
      token: company.owner.token,
    });
    expect(fallback.body).toMatchObject({ description: 'Texts recipients when parcels move.', lang: 'en' });
    expect((await store('?lang=fr')).status).toBe(400);
  });

  it('filters by category and searches by name', async () => {
    expect((await store('?category=accounting')).body.data.map((a: Json) => a.name)).toEqual([
      'Books 100% Sync',
    ]);
    expect((await store('?q=label')).body.data.map((a: Json) => a.name)).toEqual(['Label Printer']);
    expect((await store('?q=100%25')).body.data.map((a: Json) => a.name)).toEqual(['Books 100% Sync']);
    expect((await store('?q=tool')).body.data).toEqual([]);
    expect((await store('?category=shipping&q=notify')).body.data).toEqual([]);
  });

  it("says whether the caller's company has the app installed", async () => {
    await install(w, { appId: apps.labels.id, tenantId: company.tenantId, userId: company.owner.id });
    const mine = await store(`?tenant_id=${company.tenantId}`);
    expect(mine.body.data.find((a: Json) => a.id === apps.labels.id).installed).toBe(true);
    expect(mine.body.data.find((a: Json) => a.id === apps.books.id).installed).toBe(false);
    // Without tenant_id: any of the person's companies.
    expect((await store()).body.data.find((a: Json) => a.id === apps.labels.id).installed).toBe(true);
    const other = await createCompany(w, 'Other Company');
    const theirs = await call(w, 'GET', `/v1/store/apps/${apps.labels.id}?tenant_id=${other.tenantId}`, {
      token: other.owner.token,
    });
    expect(theirs.body.installed).toBe(false);
    // A company the person is not in does not exist for them.
    const foreign = await store(`?tenant_id=${other.tenantId}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.code).toBe('company.not_found');
  });

  it('is for signed-in people; one app reads alone; the categories are served', async () => {
    expect((await call(w, 'GET', '/v1/store/apps')).status).toBe(401);
    const apiToken = await store('', company.liveToken);
    expect(apiToken.status).toBe(403);
    expect(apiToken.body.code).toBe('auth.session_required');
    const anyone = await signUpPerson(w, 'Browser');
    expect((await store('', anyone.token)).body.data).toHaveLength(3);
    for (const hidden of [apps.private, apps.waiting, apps.gone, { id: 'app_missing' }]) {
      const response = await call(w, 'GET', `/v1/store/apps/${hidden.id}`, { token: anyone.token });
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('app.not_found');
    }
    const categories = await call(w, 'GET', '/v1/store/categories');
    expect(categories.status).toBe(200);
    expect(categories.body.data).toContainEqual({
      id: 'shipping',
      en: 'Shipping and carriers',
      es: 'Envíos y transportistas',
    });
  });
});
