import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret } from '../../src/lib/ids.ts';
import { findAppByClientId } from '../../src/modules/apps/registry.ts';
import { approveAuthorization } from '../../src/modules/oauth/authorize/approve.ts';
import type { AuthorizationRequest } from '../../src/modules/oauth/authorize/request.ts';
import { dropSpentPairs } from '../../src/modules/oauth/tokens.ts';
import { listTools, registerAgent } from '../mcp/support.ts';
import { type CompanyFixture, call, createCompany } from '../support/api.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';
import {
  authorizationRequest,
  discover,
  insecure,
  obtainTokens,
  registerApp,
  type TestApp,
} from './support.ts';

/**
 * CONTRACT.md (Agents), issue 39 items 3 and 6, with oauth4webapi as the client: an agent client
 * (no developer) gets tokens for /mcp alone, in the mode a person approved and the company allows;
 * its refresh grace answers the very pair of the first use; a developer's app has no grace.
 */
describe('agent clients at the token endpoint', () => {
  let w: TestWaybill;
  let as: oauth.AuthorizationServer;
  let company: CompanyFixture;

  beforeAll(async () => {
    w = await startWaybill();
    as = await discover(w);
    company = await createCompany(w);
  });
  afterAll(async () => {
    await w?.close();
  });

  /** Consent by the owner (with the form `fields`) and the code exchange, as a client sends them. */
  const connect = (
    client: TestApp,
    options: { owner?: CompanyFixture; fields?: Record<string, string> } = {},
  ) => obtainTokens(w, as, client, (options.owner ?? company).owner, { scope: 'shipments:read', ...options });

  function refresh(client: TestApp, token: string, resource?: string) {
    return oauth
      .refreshTokenGrantRequest(as, { client_id: client.clientId }, oauth.None(), token, {
        ...insecure,
        ...(resource ? { additionalParameters: { resource } } : {}),
      })
      .then((r) => oauth.processRefreshTokenResponse(as, { client_id: client.clientId }, r));
  }

  const rest = (token: string) => call(w, 'GET', '/v1/shipments', { token });

  it('a registered client that names no resource gets a test token for /mcp alone; /v1 is invalid_target', async () => {
    const agent = await registerAgent(w);
    const tokens = await connect(agent);
    // The review's finding: this was an atk_live_ token for /v1 with the scopes asked for.
    expect(tokens.access_token.startsWith('atk_test_')).toBe(true);
    expect((await rest(tokens.access_token)).status).toBe(401);
    expect((await listTools(w, tokens.access_token)).status).toBe(200);
    const connections = await call(w, 'GET', `/v1/companies/${company.tenantId}/agent-connections`, {
      token: company.owner.token,
    });
    expect(connections.body.data).toEqual([
      expect.objectContaining({ client_id: agent.clientId, mode: 'test', scopes: ['shipments:read'] }),
    ]);
    const installations = await call(w, 'GET', `/v1/companies/${company.tenantId}/installations`, {
      token: company.owner.token,
    });
    expect(installations.body.data).toEqual([]);

    // At the token endpoint too: the REST API is never its target, and asking spends nothing.
    const refused = refresh(agent, tokens.refresh_token as string, `${w.url}/v1`);
    await expect(refused).rejects.toMatchObject({ error: 'invalid_target', status: 400 });
    const refreshed = await refresh(agent, tokens.refresh_token as string, `${w.url}/mcp`);
    expect(refreshed.access_token.startsWith('atk_test_')).toBe(true);
    expect((await rest(refreshed.access_token)).status).toBe(401);
    expect((await listTools(w, refreshed.access_token)).status).toBe(200);
  });

  it('an approval never makes a /v1 grant for an agent client, whatever the request says', async () => {
    const agent = await registerAgent(w, 'Insistent Agent');
    const app = await findAppByClientId(w.ctx, agent.clientId);
    const request = await authorizationRequest(agent);
    // What a request for /v1 would be, were the authorization endpoint to let it through.
    const forRest = (mode?: string) =>
      approveAuthorization(
        w.ctx,
        {
          app,
          redirectUri: agent.redirectUri,
          state: request.state,
          codeChallenge: request.query.get('code_challenge'),
          scopes: ['shipments:read'],
          widens: false,
          resource: 'v1',
          resourceUrl: `${w.url}/v1`,
          metadataDocument: null,
          agentClient: null,
        } as AuthorizationRequest,
        company.owner.id,
        company.tenantId,
        mode,
      );
    // Live is refused (a test company); in test mode the grant is for /mcp.
    await expect(forRest('live')).rejects.toThrow();
    const testCode = await forRest();
    const row = await w.ctx.db
      .selectFrom('oauth_codes')
      .innerJoin('installations', 'installations.id', 'oauth_codes.installation_id')
      .select(['oauth_codes.resource', 'installations.resource as granted', 'installations.livemode'])
      .where('code_hash', '=', hashSecret(testCode))
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ resource: 'mcp', granted: 'mcp', livemode: false });
  });

  it('live tokens only while the company allows agents live data: a refused refresh spends nothing', async () => {
    const live = await createCompany(w, 'Live Company');
    expect(
      (await call(w, 'POST', `/v1/companies/${live.tenantId}/go-live`, { token: live.owner.token })).status,
    ).toBe(200);
    const agentAccess = (value: { live: boolean }) =>
      call(w, 'PATCH', `/v1/companies/${live.tenantId}`, {
        token: live.owner.token,
        body: { agent_access: value },
      });
    expect((await agentAccess({ live: true })).status).toBe(200);
    const agent = await registerAgent(w, 'Live Agent');
    const tokens = await connect(agent, { owner: live, fields: { mode: 'live' } });
    expect(tokens.access_token.startsWith('atk_live_')).toBe(true);
    expect((await rest(tokens.access_token)).status).toBe(401);

    await agentAccess({ live: false });
    await expect(refresh(agent, tokens.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await agentAccess({ live: true });
    const again = await refresh(agent, tokens.refresh_token as string);
    expect(again.access_token.startsWith('atk_live_')).toBe(true);
  });

  it('eight refreshes at once with one token, and eight more with it spent: the same pair, one family', async () => {
    const agent = await registerAgent(w, 'Busy Agent');
    const tokens = await connect(agent);
    const token = tokens.refresh_token as string;
    const first = await Promise.all(Array.from({ length: 8 }, () => refresh(agent, token)));
    const again = await Promise.all(Array.from({ length: 8 }, () => refresh(agent, token)));
    const pairs = new Set([...first, ...again].map((r) => `${r.access_token} ${r.refresh_token}`));
    expect(pairs.size).toBe(1);
    const [pair] = first;
    expect(pair?.access_token.startsWith('atk_test_')).toBe(true);
    expect(pair?.expires_in).toBeGreaterThan(3500);

    // One family: the first pair and the one rotation, nothing revoked; the minted pair works on.
    const rows = await w.ctx.db
      .selectFrom('oauth_tokens')
      .select(['kind', 'used_at', 'revoked_at', 'reissue_sealed'])
      .where('installation_id', '=', tokens.installation_id as string)
      .execute();
    expect(rows.filter((r) => r.kind === 'access')).toHaveLength(2);
    expect(rows.filter((r) => r.kind === 'refresh' && r.used_at === null)).toHaveLength(1);
    expect(rows.every((r) => r.revoked_at === null)).toBe(true);
    // Kept sealed at rest: neither secret appears in the row.
    const sealed = rows.find((r) => r.reissue_sealed)?.reissue_sealed as string;
    expect(sealed).not.toContain(pair?.refresh_token?.slice(4));
    expect(sealed).not.toContain(pair?.access_token.slice(9));
    expect((await listTools(w, pair?.access_token as string)).status).toBe(200);
    const next = await refresh(agent, pair?.refresh_token as string);
    expect((await listTools(w, next.access_token)).status).toBe(200);
  });

  it("after 30 s the agent's spent token revokes the family, and its sealed pair is gone", async () => {
    const agent = await registerAgent(w, 'Slow Agent');
    const tokens = await connect(agent);
    const token = tokens.refresh_token as string;
    const pair = await refresh(agent, token);
    w.clock.advance(29_000);
    expect(await dropSpentPairs(w.ctx)).toBe(0);
    expect((await refresh(agent, token)).access_token).toBe(pair.access_token);
    w.clock.advance(2_000);
    expect(await dropSpentPairs(w.ctx)).toBeGreaterThanOrEqual(1);
    const spent = await w.ctx.db
      .selectFrom('oauth_tokens')
      .select('reissue_sealed')
      .where('token_hash', '=', hashSecret(token))
      .executeTakeFirstOrThrow();
    expect(spent.reissue_sealed).toBeNull();
    await expect(refresh(agent, token)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await listTools(w, pair.access_token)).status).toBe(401);
    await expect(refresh(agent, pair.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
  });

  it("a developer's app has no grace: of eight refreshes at once one gets a pair, and every token ends", async () => {
    const app = await registerApp(w, { kind: 'public' });
    const tokens = await connect(app);
    expect(tokens.access_token.startsWith('atk_live_')).toBe(true);
    const token = tokens.refresh_token as string;
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => refresh(app, token)));
    const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(won).toHaveLength(1);
    for (const r of results)
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ error: 'invalid_grant', status: 400 });
    expect((await rest(won[0]?.access_token as string)).status).toBe(401);
    expect((await rest(tokens.access_token)).status).toBe(401);

    // And one second use, however soon, is enough.
    const other = await registerApp(w, { kind: 'public' });
    const held = await connect(other);
    const rotated = await refresh(other, held.refresh_token as string);
    await expect(refresh(other, held.refresh_token as string)).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    expect((await rest(rotated.access_token)).status).toBe(401);
  });
});
