import * as oauth from 'oauth4webapi';
import {
  authorizationRequest,
  consent,
  discover,
  insecure,
  registerApp,
  signedInJar,
  type TestApp,
} from '../oauth/support.ts';
import type { CompanyFixture } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';

/**
 * Tokens for `{base_url}/mcp` the way an agent gets them: a public app, the owner's consent (test
 * mode, the default) and the code exchange with oauth4webapi.
 */
export async function mcpTokens(
  w: TestWaybill,
  company: CompanyFixture,
): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(w);
  const app = await registerApp(w, { kind: 'public' });
  const request = await authorizationRequest(app, { resource: `${w.url}/mcp` });
  const location = await consent(await signedInJar(w, company.owner), request);
  const client = { client_id: app.clientId };
  const params = oauth.validateAuthResponse(as, client, location, request.state);
  return oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      app.redirectUri,
      request.verifier,
      insecure,
    ),
  );
}

/** `tools/list` on `/mcp` with a bearer token, as a plain client sends it (the status is what counts). */
export function listTools(w: TestWaybill, token: string): Promise<Response> {
  return fetch(`${w.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
}

/** A public agent client registered as RFC 7591 says (no developer): its id and redirect. */
export async function registerAgent(w: TestWaybill, name = 'Terminal Agent'): Promise<TestApp> {
  const redirectUri = 'http://127.0.0.1:33418/callback';
  const response = await fetch(`${w.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: name,
      redirect_uris: [redirectUri],
      application_type: 'native',
      token_endpoint_auth_method: 'none',
    }),
  });
  if (response.status !== 201) throw new Error(`registration answered ${response.status}`);
  const body = (await response.json()) as { client_id: string };
  return { clientId: body.client_id, clientSecret: null, redirectUri, kind: 'public' };
}
