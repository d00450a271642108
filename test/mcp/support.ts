import * as oauth from 'oauth4webapi';
import {
  authorizationRequest,
  consent,
  discover,
  insecure,
  registerApp,
  signedInJar,
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
