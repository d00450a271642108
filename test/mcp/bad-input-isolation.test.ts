import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CompanyFixture, call, createCompany, createShipment, type Json } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import { mcpTokens } from './support.ts';

/**
 * An agent's bad requests (tool calls with wrong types or another company's ids, registrations that
 * break RFC 7591 or 8252, client metadata documents that cannot be fetched) each get their clear
 * error, and 100 of them leave another company exactly as it was.
 */
describe('bad input from an agent', () => {
  let w: TestWaybill;
  let attacker: CompanyFixture;
  let bystander: CompanyFixture;
  let theirs: Json;
  let token: string;

  beforeAll(async () => {
    w = await startWaybill();
    attacker = await createCompany(w, 'Attacker Ltd');
    bystander = await createCompany(w, 'Bystander Ltd');
    theirs = await createShipment(w, bystander.testToken, { external_ref: 'order-7' });
    await call(w, 'POST', '/v1/webhook-endpoints', {
      token: bystander.testToken,
      body: { url: 'https://receiver.example/hooks', event_types: ['shipment.status_changed'] },
    });
    token = (await mcpTokens(w, attacker)).access_token;
  });
  afterAll(async () => {
    await w?.close();
  });

  async function toolCall(name: string, args: unknown) {
    const response = await fetch(`${w.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name, arguments: args },
      }),
    });
    return {
      status: response.status,
      challenge: response.headers.get('www-authenticate') ?? '',
      body: (await response.json()) as Json,
    };
  }

  /** What the bystander's own tokens see, and the registrations on the server. */
  async function bystanderView() {
    const read = async (path: string) =>
      (await call(w, 'GET', path, { token: bystander.testToken })).body as Json;
    const registrations = await w.ctx.db
      .selectFrom('agent_clients')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return {
      shipment: await read(`/v1/shipments/${theirs.id}`),
      shipments: await read('/v1/shipments'),
      events: await read('/v1/events'),
      endpoints: await read('/v1/webhook-endpoints'),
      registrations: Number(registrations.n),
    };
  }

  it('answers 100 bad requests with clear errors and changes nothing of another company', async () => {
    const before = await bystanderView();
    const badTools: [string, unknown, string][] = [
      ['update_shipment_status', { id: theirs.id, status: 'picked_up' }, 'shipment.not_found'],
      ['update_shipment_status', { id: 42, status: 'picked_up' }, 'validation.failed'],
      ['update_shipment_status', { id: theirs.id, status: ['delivered'] }, 'validation.failed'],
      ['get_shipment', { id: theirs.id }, 'shipment.not_found'],
      ['get_shipment', { tracking_number: theirs.tracking_number }, 'shipment.not_found'],
      ['search_shipments', { limit: 'all' }, 'validation.failed'],
    ];
    const badRegistrations: unknown[] = [
      { redirect_uris: ['http://agent.example/callback'] },
      { redirect_uris: ['http://127.0.0.1:9/callback'], application_type: 'web' },
      { redirect_uris: 'https://agent.example/cb' },
      '{"redirect_uris": [',
    ];
    let sent = 0;
    while (sent < 100) {
      for (const [name, args, code] of badTools) {
        const answer = await toolCall(name, args);
        expect(answer.status).toBe(200);
        const result = answer.body.result as { isError: boolean; structuredContent: { code: string } };
        expect(result.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
        expect(result.structuredContent.code).toBe(code);
        sent++;
      }
      // A tool beyond the grant's scopes is refused before it runs, with the step-up challenge.
      const beyond = await toolCall('replay_webhook_delivery', { delivery_id: { $ne: null } });
      expect(beyond.status).toBe(403);
      expect(beyond.challenge).toMatch(/error="insufficient_scope"/);
      sent++;
      for (const body of badRegistrations) {
        const response = await fetch(`${w.url}/oauth/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });
        // 400 with the RFC 7591 error, or 429 once the address's registrations are spent.
        expect([400, 429]).toContain(response.status);
        if (response.status === 400) expect(((await response.json()) as Json).error).toMatch(/^invalid_/);
        sent++;
      }
      // A client metadata document is never fetched for someone signed out (review finding I2):
      // they are sent to sign in first.
      const metadataUrl = encodeURIComponent('https://10.0.0.1/agent.json');
      const authorize = await fetch(
        `${w.url}/oauth/authorize?response_type=code&client_id=${metadataUrl}&redirect_uri=${encodeURIComponent('https://10.0.0.1/cb')}&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
        { redirect: 'manual' },
      );
      expect(authorize.status).toBe(303);
      expect(authorize.headers.get('location')).toMatch(/^\/signin\?return_to=/);
      sent++;
    }
    expect(sent).toBeGreaterThanOrEqual(100);
    expect(await bystanderView()).toEqual(before);
  });
});
