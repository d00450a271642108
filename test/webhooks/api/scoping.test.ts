import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createCompany, createShipment, type Json } from '../../support/api.ts';
import { startWaybill, type TestWaybill } from '../../support/harness.ts';
import { createEndpoint, createMerchant, type Receiver, startReceiver } from './support.ts';

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Every route that takes an endpoint or delivery id, with a harmless body. */
const ENDPOINT_ROUTES: Array<[Method, string, unknown?]> = [
  ['GET', ''],
  ['PATCH', '', { description: 'taken over' }],
  ['GET', '/secret'],
  ['POST', '/rotate-secret'],
  ['POST', '/test'],
  ['GET', '/deliveries'],
  ['POST', '/deliveries/replay'],
  ['DELETE', ''],
];
const DELIVERY_ROUTES: Array<[Method, string]> = [
  ['GET', ''],
  ['POST', '/replay'],
];

describe('who sees which endpoints and deliveries', () => {
  let w: TestWaybill;
  let receiver: Receiver;
  const tokens: Record<string, string> = {};
  const endpoints: Record<string, Json> = {};
  const deliveries: Record<string, string> = {};

  beforeAll(async () => {
    w = await startWaybill();
    receiver = await startReceiver();
    const company = await createCompany(w);
    const merchant = await createMerchant(w, company);
    const otherMerchant = await createMerchant(w, company);
    const stranger = await createCompany(w, 'Stranger');
    Object.assign(tokens, {
      companyLive: company.liveToken,
      companyTest: company.testToken,
      merchant: merchant.token,
      otherMerchant: otherMerchant.token,
      stranger: stranger.liveToken,
    });
    endpoints.live = await createEndpoint(w, company.liveToken, { url: receiver.url });
    endpoints.test = await createEndpoint(w, company.testToken, { url: receiver.url });
    endpoints.merchant = await createEndpoint(w, merchant.token, { url: receiver.url });
    expect(endpoints.test.livemode).toBe(false);
    expect(endpoints.merchant.customer_account_id).toBe(merchant.accountId);
    await createShipment(w, company.testToken);
    await createShipment(w, merchant.token);
    for (const [name, endpoint] of Object.entries(endpoints)) {
      const page = await call(w, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`, {
        token: name === 'test' ? company.testToken : name === 'merchant' ? merchant.token : company.liveToken,
      });
      expect(page.body.data).toHaveLength(1);
      deliveries[name] = page.body.data[0].id;
    }
  });
  afterAll(async () => {
    await receiver?.close();
    await w?.close();
  });

  const SEES: Record<string, string[]> = {
    companyLive: ['live', 'merchant'],
    companyTest: ['test'],
    merchant: ['merchant'],
    otherMerchant: [],
    stranger: [],
  };

  it.each(Object.keys(SEES))('lists only what the %s token may see', async (who) => {
    const list = await call(w, 'GET', '/v1/webhook-endpoints', { token: tokens[who] });
    expect(list.status).toBe(200);
    const seen = list.body.data.map((e: Json) => e.id).sort();
    expect(seen).toEqual((SEES[who] ?? []).map((name) => endpoints[name].id).sort());
  });

  it.each(Object.keys(SEES))('answers 404 on every route for what the %s token may not see', async (who) => {
    for (const name of Object.keys(endpoints).filter((n) => !(SEES[who] ?? []).includes(n))) {
      for (const [method, suffix, body] of ENDPOINT_ROUTES) {
        const response = await call(w, method, `/v1/webhook-endpoints/${endpoints[name].id}${suffix}`, {
          token: tokens[who],
          ...(body ? { body } : {}),
        });
        expect([method, suffix, name, response.status]).toEqual([method, suffix, name, 404]);
        expect(response.body.code).toBe('webhook_endpoint.not_found');
      }
      for (const [method, suffix] of DELIVERY_ROUTES) {
        const response = await call(w, method, `/v1/webhook-deliveries/${deliveries[name]}${suffix}`, {
          token: tokens[who],
        });
        expect([method, suffix, name, response.status]).toEqual([method, suffix, name, 404]);
        expect(response.body.code).toBe('webhook_delivery.not_found');
      }
    }
    // Nothing reached the receiver and nothing changed.
    expect(receiver.received).toHaveLength(0);
  });

  it('lets each token read what it may see', async () => {
    for (const [who, names] of Object.entries(SEES)) {
      for (const name of names) {
        const endpoint = await call(w, 'GET', `/v1/webhook-endpoints/${endpoints[name].id}`, {
          token: tokens[who],
        });
        expect(endpoint.status).toBe(200);
        expect(endpoint.body.description).toBeNull();
        const delivery = await call(w, 'GET', `/v1/webhook-deliveries/${deliveries[name]}`, {
          token: tokens[who],
        });
        expect(delivery.status).toBe(200);
        const secret = await call(w, 'GET', `/v1/webhook-endpoints/${endpoints[name].id}/secret`, {
          token: tokens[who],
        });
        expect(secret.body.secret).toBe(endpoints[name].secret);
      }
    }
  });
});
