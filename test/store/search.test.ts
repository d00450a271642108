import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY, SECOND } from '../../src/lib/clock.ts';
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
let shopper: Person;
let receiver: Awaited<ReturnType<typeof startEventsReceiver>>;
const apps: Record<string, Json> = {};

async function publish(
  name: string,
  category: string,
  texts: { tagline: string; en: string; es: string },
): Promise<Json> {
  const app = await registerPublishable(w, developer, receiver.url, { name });
  await submitAndDecide(
    w,
    developer,
    reviewer,
    app.id,
    {
      listing: listing(app.scopes, {
        category,
        tagline: texts.tagline,
        description_en: texts.en,
        description_es: texts.es,
      }),
    },
    'approved',
  );
  w.clock.advance(SECOND);
  return app;
}

function companies(count: number, prefix: string) {
  return Promise.all(Array.from({ length: count }, (_, i) => ownerOfCompany(w, `${prefix} ${i}`)));
}

async function names(query: string): Promise<string[]> {
  const response = await call(w, 'GET', `/v1/store/apps${query}`, { token: shopper.token });
  if (response.status !== 200) throw new Error(response.text);
  return response.body.data.map((a: Json) => a.name);
}

beforeAll(async () => {
  w = await startWaybill(reviewerEnv);
  developer = await signUpPerson(w, 'Search Developer');
  reviewer = await signUpAs(w, REVIEWERS[0] as string, 'Reviewer');
  shopper = await signUpPerson(w, 'Shopper');
  receiver = await startEventsReceiver(() => 200);
  apps.labels = await publish('Label Printer', 'shipping', {
    tagline: 'Labels for every carrier',
    en: 'Prints shipping labels for your parcels in one click.',
    es: 'Imprime etiquetas de envío para tus paquetes con un clic.',
  });
  apps.returns = await publish('Returns Desk', 'customer_service', {
    tagline: 'Returns without the paperwork',
    en: 'Customers start their own returns; you approve them.',
    es: 'Tus clientes inician sus devoluciones y tú las apruebas.',
  });
  apps.books = await publish('Ledger Link', 'accounting', {
    tagline: 'Invoices straight to your books',
    en: 'Sends every invoice to your accounting software.',
    es: 'Envía cada factura a tu programa de contabilidad.',
  });
  apps.notify = await publish('Notify Me', 'notifications', {
    tagline: 'Texts when parcels move',
    en: 'Texts recipients when their parcels are out for delivery.',
    es: 'Avisa por SMS a los destinatarios cuando el envío sale a reparto.',
  });

  // Ratings: Returns Desk 5 and 5, Ledger Link 4, Label Printer 2 and 3; Notify Me none.
  // Installations: Label Printer 12 (a "10+" bucket), Returns Desk 2, Ledger Link 1.
  const people = await companies(12, 'Buyer');
  for (const c of people)
    await install(w, { appId: apps.labels.id, tenantId: c.tenantId, userId: c.owner.id });
  for (const c of people.slice(0, 2)) {
    await install(w, { appId: apps.returns.id, tenantId: c.tenantId, userId: c.owner.id });
  }
  await install(w, {
    appId: apps.books.id,
    tenantId: people[2]?.tenantId as string,
    userId: people[2]?.owner.id as string,
  });
  w.clock.advance(7 * DAY);
  const rate = async (i: number, app: Json, rating: number) => {
    const person = await signInAgain(w, (people[i] as { owner: Person }).owner);
    const answer = await call(w, 'POST', `/v1/store/apps/${app.id}/reviews`, {
      token: person.token,
      body: { rating, body: `Rated ${rating}` },
    });
    if (answer.status !== 201) throw new Error(answer.text);
  };
  await rate(0, apps.returns, 5);
  await rate(1, apps.returns, 5);
  await rate(2, apps.books, 4);
  await rate(3, apps.labels, 2);
  await rate(4, apps.labels, 3);
  shopper = await signInAgain(w, shopper);
});
afterAll(async () => {
  await receiver?.close();
  await w?.close();
});

describe('store search and sort', () => {
  it('finds a Spanish listing by a Spanish word, stemmed and with or without accents', async () => {
    expect(await names('?lang=es&q=etiquetas')).toEqual(['Label Printer']);
    expect(await names('?lang=es&q=etiqueta')).toEqual(['Label Printer']);
    // "envío" in the text; people type it either way.
    expect(await names('?lang=es&q=envio')).toEqual(expect.arrayContaining(['Label Printer', 'Notify Me']));
    expect(await names('?lang=es&q=env%C3%ADo')).toEqual(
      expect.arrayContaining(['Label Printer', 'Notify Me']),
    );
    expect(await names('?lang=es&q=devoluciones')).toEqual(['Returns Desk']);
    expect(await names('?lang=es&q=factura')).toEqual(['Ledger Link']);
  });

  it('searches English with stemming over the name, tagline and description', async () => {
    expect(await names('?q=printing')).toEqual(['Label Printer']);
    expect(await names('?q=invoices')).toEqual(['Ledger Link']);
    expect(await names('?q=parcel')).toEqual(expect.arrayContaining(['Label Printer', 'Notify Me']));
    expect(await names('?q=parcel')).toHaveLength(2);
    // The name weighs most: "returns" is Returns Desk's name, only a word of nobody else's text.
    expect((await names('?q=returns'))[0]).toBe('Returns Desk');
    // A web-search query: a word left out.
    expect(await names('?q=parcels%20-labels')).toEqual(['Notify Me']);
    // Category narrows the search; an English word is not Spanish.
    expect(await names('?q=parcel&category=notifications')).toEqual(['Notify Me']);
    expect(await names('?lang=es&q=software')).toEqual([]);
    expect(await names('?q=software')).toEqual(['Ledger Link']);
    // Nothing a person types breaks the query.
    expect(await names(`?q=${encodeURIComponent("'&|!:*()<-> \\")}`)).toEqual([]);
  });

  it('sorts by rating, installs and newest, with stars and install buckets on each app', async () => {
    expect(await names('?sort=rating')).toEqual([
      'Returns Desk',
      'Ledger Link',
      'Label Printer',
      'Notify Me',
    ]);
    expect(await names('?sort=installs')).toEqual([
      'Label Printer',
      'Returns Desk',
      'Ledger Link',
      'Notify Me',
    ]);
    expect(await names('?sort=newest')).toEqual([
      'Notify Me',
      'Ledger Link',
      'Returns Desk',
      'Label Printer',
    ]);
    expect(await names('')).toEqual(await names('?sort=newest'));

    const all = (await call(w, 'GET', '/v1/store/apps?sort=rating', { token: shopper.token })).body.data;
    const byName = Object.fromEntries(all.map((a: Json) => [a.name, a]));
    expect(byName['Label Printer']).toMatchObject({
      rating_avg: 2.5,
      review_count: 2,
      rating_distribution: { '1': 0, '2': 1, '3': 1, '4': 0, '5': 0 },
      installs: '10+',
    });
    expect(byName['Returns Desk']).toMatchObject({ rating_avg: 5, installs: '<10' });
    expect(byName['Notify Me']).toMatchObject({ rating_avg: null, review_count: 0, installs: '<10' });
  });

  it('pages through a sorted list with its cursor, and refuses a foreign cursor', async () => {
    const first = await call(w, 'GET', '/v1/store/apps?sort=rating&limit=3', { token: shopper.token });
    expect(first.body.data.map((a: Json) => a.name)).toEqual([
      'Returns Desk',
      'Ledger Link',
      'Label Printer',
    ]);
    const second = await call(
      w,
      'GET',
      `/v1/store/apps?sort=rating&limit=3&cursor=${first.body.next_cursor}`,
      {
        token: shopper.token,
      },
    );
    expect(second.body.data.map((a: Json) => a.name)).toEqual(['Notify Me']);
    expect(second.body.next_cursor).toBeNull();
    const wrong = await call(w, 'GET', '/v1/store/apps?sort=rating&cursor=not-ours', {
      token: shopper.token,
    });
    expect(wrong.status).toBe(400);
    expect((await call(w, 'GET', '/v1/store/apps?sort=best', { token: shopper.token })).status).toBe(400);
  });
});
