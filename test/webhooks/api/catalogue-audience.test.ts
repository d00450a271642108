import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectProblem } from '../../http/expect.ts';
import { type CompanyFixture, call, createCompany, type Json } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { type Receiver, startReceiver } from './support.ts';

/**
 * A client that subscribes an endpoint to "every type in the catalogue" (issue 30 item 6): each
 * entry says who receives it (`audience`), so the client takes the endpoints' ones; taking all of
 * them is refused with a clear 422 naming each type meant for apps.
 */
describe('the event catalogue says who receives each type', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    company = await createCompany(w);
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  const catalogue = async (query = '') => {
    const answer = await call(w, 'GET', `/v1/webhook-event-types${query}`, { token: company.liveToken });
    expect(answer.status).toBe(200);
    return answer.body.data as Json[];
  };
  const subscribe = (eventTypes: string[]) =>
    call(w, 'POST', '/v1/webhook-endpoints', {
      token: company.liveToken,
      body: { url: receiver.url, event_types: eventTypes },
    });

  it('an endpoint subscribes to every type whose audience is endpoints', async () => {
    const all = await catalogue();
    expect(new Set(all.map((entry) => entry.audience))).toEqual(new Set(['endpoints', 'apps']));
    const forEndpoints = all.filter((entry) => entry.audience === 'endpoints').map((entry) => entry.type);
    expect(forEndpoints).toContain('shipment.created');
    expect(forEndpoints).toContain('webhook_endpoint.failing');
    const forApps = all.filter((entry) => entry.audience === 'apps').map((entry) => entry.type);
    expect(forApps).toEqual(
      expect.arrayContaining(['app.uninstalled', 'customer.data_request', 'customer.redact']),
    );

    const created = await subscribe(forEndpoints);
    expect(created.status, created.text).toBe(201);
    expect(created.body.event_types).toEqual(forEndpoints);

    // The same list, from the filter.
    expect((await catalogue('?audience=endpoints')).map((entry) => entry.type)).toEqual(forEndpoints);
    expect((await catalogue('?audience=apps')).map((entry) => entry.type)).toEqual(forApps);
    expectProblem(
      await call(w, 'GET', '/v1/webhook-event-types?audience=everyone', { token: company.liveToken }),
      400,
      'validation.failed',
    );
  });

  it('taking the whole catalogue is a 422 that names every type meant for apps', async () => {
    const all = (await catalogue()).map((entry) => entry.type);
    const refused = await subscribe(all);
    expectProblem(refused, 422, 'webhook_endpoint.event_type_for_apps');
    const appIndexes = all.flatMap((type, index) =>
      type.startsWith('shipment.') || type.startsWith('webhook_endpoint.') ? [] : [index],
    );
    expect(refused.body.errors.map((error: Json) => error.path)).toEqual(
      appIndexes.map((i) => `/event_types/${i}`),
    );
    expect(refused.body.detail).toContain('audience=endpoints');
    // Nothing was made.
    const list = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.liveToken });
    expect(list.body.data).toHaveLength(1);
  });
});
