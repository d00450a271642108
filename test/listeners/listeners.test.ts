import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MINUTE } from '../../src/lib/clock.ts';
import { LISTENER_LIMIT, sweepListeners } from '../../src/modules/listeners/service.ts';
import { install, issueAppTokens, registerApp } from '../apps/fixtures.ts';
import { verify } from '../delivery/support.ts';
import { expectProblem } from '../http/expect.ts';
import {
  type CompanyFixture,
  call,
  createApiToken,
  createCompany,
  createShipment,
  type Json,
} from '../support/api.ts';
import { eventually } from '../support/eventually.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { createMerchant } from '../webhooks/api/support.ts';
import { connectListener } from './support.ts';

let w: TestWaybill;
let company: CompanyFixture;
let other: CompanyFixture;

beforeAll(async () => {
  w = await startWaybill();
  company = await createCompany(w);
  other = await createCompany(w, 'Other Company');
});
afterAll(async () => {
  await w?.close();
});

async function register(token: string, body: Json = { forward_to: 'http://localhost:4000/webhooks' }) {
  return call(w, 'POST', '/v1/webhook-listeners', { token, body });
}

async function deliveryLog(endpointId: string) {
  const page = await call(w, 'GET', `/v1/webhook-endpoints/${endpointId}/deliveries`, {
    token: company.testToken,
  });
  expect(page.status).toBe(200);
  return page.body.data as Json[];
}

async function attemptsOf(deliveryId: string) {
  const detail = await call(w, 'GET', `/v1/webhook-deliveries/${deliveryId}`, { token: company.testToken });
  expect(detail.status).toBe(200);
  return detail.body as Json;
}

describe('registering a listener', () => {
  it('is for test API keys only: live keys, app tokens and people are refused before the body is read', async () => {
    expectProblem(await register(company.liveToken, {}), 403, 'webhook_listener.test_mode_only');
    const app = await registerApp(w, company.owner);
    const installation = await install(w, {
      appId: app.id,
      tenantId: company.tenantId,
      userId: company.owner.id,
    });
    const { accessToken: appToken } = await issueAppTokens(w, {
      appId: app.id,
      installationId: installation.id,
      userId: company.owner.id,
    });
    expectProblem(await register(appToken, {}), 403, 'webhook_listener.test_mode_only');
    expectProblem(await register(company.owner.token, {}), 403, 'auth.insufficient_scope');
    expectProblem(await register('', {}), 401, 'auth.invalid_token');
    const readOnly = await createApiToken(w, company.owner, company.tenantId, {
      mode: 'test',
      scopes: ['webhooks:read'],
    });
    expectProblem(await register(readOnly, {}), 403, 'auth.insufficient_scope');
  });

  it('validates its input', async () => {
    expectProblem(await register(company.testToken, {}), 400, 'validation.failed');
    expectProblem(await register(company.testToken, { forward_to: 'ftp://x' }), 400, 'validation.failed');
    expectProblem(
      await register(company.testToken, { forward_to: 'http://localhost:1/', event_types: ['nope'] }),
      400,
      'webhook_endpoint.invalid_event_type',
    );
  });

  it('gives each command its own test endpoint and secret, listed as a listener, outside the endpoint limit', async () => {
    const first = await register(company.testToken);
    const second = await register(company.testToken);
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(first.body.id).not.toBe(second.body.id);
    expect(first.body.secret).toMatch(/^whsec_/);
    expect(first.body.secret).not.toBe(second.body.secret);
    expect(first.body).toMatchObject({
      kind: 'cli',
      livemode: false,
      url: 'http://localhost:4000/webhooks',
      description: 'listening from the command line',
      event_types: [
        'shipment.created',
        'shipment.status_changed',
        'shipment.delivered',
        'shipment.exception',
      ],
    });
    const list = await call(w, 'GET', '/v1/webhook-endpoints', { token: company.testToken });
    expect(list.body.data.filter((e: Json) => e.kind === 'cli').length).toBeGreaterThanOrEqual(2);
    // Ordinary test endpoints still have all five places.
    for (let i = 0; i < 5; i++) {
      const created = await call(w, 'POST', '/v1/webhook-endpoints', {
        token: company.testToken,
        body: { url: `http://127.0.0.1:9/hook${i}`, event_types: ['shipment.created'] },
      });
      expect(created.status).toBe(201);
      await call(w, 'DELETE', `/v1/webhook-endpoints/${created.body.id}`, { token: company.testToken });
    }
    for (const id of [first.body.id, second.body.id])
      await call(w, 'DELETE', `/v1/webhook-endpoints/${id}`, { token: company.testToken });
  });

  it("counts listeners per owner: a merchant's test key cannot take the company's places, nor the company a merchant's", async () => {
    const owner = await createCompany(w, 'Crowded Company');
    const merchant = await createMerchant(w, owner, 'test');
    const otherMerchant = await createMerchant(w, owner, 'test');
    const taken: string[] = [];
    for (let i = 0; i < LISTENER_LIMIT; i++) {
      const created = await register(merchant.token);
      expect(created.status).toBe(201);
      taken.push(created.body.id);
    }
    expectProblem(await register(merchant.token), 409, 'webhook_listener.limit_reached');
    // The company and another merchant still have all their places.
    for (let i = 0; i < LISTENER_LIMIT; i++) {
      const created = await register(owner.testToken);
      expect(created.status).toBe(201);
      taken.push(created.body.id);
    }
    expectProblem(await register(owner.testToken), 409, 'webhook_listener.limit_reached');
    expect((await register(otherMerchant.token)).status).toBe(201);
    // A place freed is a place again.
    await call(w, 'DELETE', `/v1/webhook-endpoints/${taken[0]}`, { token: merchant.token });
    expect((await register(merchant.token)).status).toBe(201);
  });

  it('answers 426 to a plain request for the connection, and 404 for an unknown or foreign listener', async () => {
    const listener = (await register(company.testToken)).body;
    const plain = await call(w, 'GET', `/v1/webhook-listeners/${listener.id}/connect`, {
      token: company.testToken,
    });
    expectProblem(plain, 426, 'webhook_listener.upgrade_required');
    expectProblem(
      await call(w, 'GET', `/v1/webhook-listeners/${listener.id}/connect`, { token: other.testToken }),
      404,
      'webhook_listener.not_found',
    );
    expectProblem(
      await call(w, 'GET', '/v1/webhook-listeners/we_unknown/connect', { token: company.testToken }),
      404,
      'webhook_listener.not_found',
    );
    await call(w, 'DELETE', `/v1/webhook-endpoints/${listener.id}`, { token: company.testToken });
  });
});

describe('delivering over the connection', () => {
  it('sends the signed message, records the answer in the delivery log, and nothing live or foreign', async () => {
    const listener = (await register(company.testToken)).body;
    const connection = connectListener(w, listener.id, company.testToken);
    expect(await connection.ready).toMatchObject({ type: 'ready', listener_id: listener.id });

    // Neither a live event nor another company's reaches it.
    await createShipment(w, company.liveToken, { external_ref: 'live-one' });
    await createShipment(w, other.testToken, { external_ref: 'foreign-one' });
    const shipment = await createShipment(w, company.testToken, { external_ref: 'test-one' });
    const frame = await connection.nextMessage();
    const verified = verify(frame, listener.secret, w.clock.now()) as Json;
    expect(verified.type).toBe('shipment.created');
    expect(verified.data.shipment.id).toBe(shipment.id);
    expect(verified.livemode).toBe(false);
    expect(frame.headers['webhook-event']).toBe('shipment.created');
    connection.answer(frame, {
      status_code: 202,
      duration_ms: 7,
      body: Buffer.from('accepted here').toString('base64'),
    });

    const [delivery] = await eventually(async () => {
      const log = await deliveryLog(listener.id);
      return log.length === 1 && log[0].status === 'succeeded' ? log : undefined;
    }, 'the delivery to succeed');
    const detail = await attemptsOf(delivery.id);
    expect(detail.attempts).toHaveLength(1);
    expect(detail.attempts[0]).toMatchObject({
      status_code: 202,
      response_body: 'accepted here',
      error: null,
    });
    expect(detail.attempts[0].duration_ms).toBeLessThanOrEqual(7);
    expect(connection.messages).toHaveLength(1);
    connection.close();
    await connection.closed;
    await call(w, 'DELETE', `/v1/webhook-endpoints/${listener.id}`, { token: company.testToken });
  });

  it('a listener that drops mid-message: the attempt fails, and the retry reaches it when it is back', async () => {
    const listener = (
      await register(company.testToken, {
        forward_to: 'http://localhost:4000/webhooks',
        event_types: ['shipment.created'],
      })
    ).body;
    const first = connectListener(w, listener.id, company.testToken);
    await first.ready;
    // One connection per listener.
    const second = connectListener(w, listener.id, company.testToken);
    expect(await second.closed).not.toBe(1000);

    await createShipment(w, company.testToken, { external_ref: 'dropped' });
    const frame = await first.nextMessage();
    first.close();
    await first.closed;
    const [delivery] = await eventually(async () => {
      const log = await deliveryLog(listener.id);
      return log[0]?.attempt_count === 1 ? log : undefined;
    }, 'the failed attempt');
    expect(delivery.status).toBe('pending');
    expect((await attemptsOf(delivery.id)).attempts[0]).toMatchObject({
      status_code: null,
      error: 'connection_failed',
    });

    // Back within the grace period, after the retry is due: the same message, the same webhook-id.
    w.clock.advance(2 * MINUTE);
    const back = connectListener(w, listener.id, company.testToken);
    await back.ready;
    const again = await back.nextMessage();
    expect(again.headers['webhook-id']).toBe(frame.headers['webhook-id']);
    back.answer(again, { status_code: 200 });
    await eventually(async () => (await deliveryLog(listener.id))[0]?.status === 'succeeded', 'the retry');
    back.close();
    await back.closed;
  });

  it('a listener whose command does not come back within the grace period is removed', async () => {
    const listener = (await register(company.testToken)).body;
    const connection = connectListener(w, listener.id, company.testToken);
    await connection.ready;
    // Later than its registration, so that the mark of the connection's end can be told apart.
    w.clock.advance(MINUTE);
    connection.close();
    await connection.closed;
    await eventually(async () => {
      const row = await w.ctx.db
        .selectFrom('webhook_endpoints')
        .select('listener_seen_at')
        .where('id', '=', listener.id)
        .executeTakeFirst();
      return row?.listener_seen_at?.getTime() === w.clock.now().getTime();
    }, 'the grace period to start');
    w.clock.advance(9 * MINUTE);
    await sweepListeners(w.ctx);
    expect(
      (await call(w, 'GET', `/v1/webhook-endpoints/${listener.id}`, { token: company.testToken })).status,
    ).toBe(200);
    w.clock.advance(2 * MINUTE);
    await sweepListeners(w.ctx);
    expectProblem(
      await call(w, 'GET', `/v1/webhook-endpoints/${listener.id}`, { token: company.testToken }),
      404,
      'webhook_endpoint.not_found',
    );
  });
});
