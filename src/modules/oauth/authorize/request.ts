import type { AppContext } from '../../../context.ts';
import { isScope, type Scope } from '../../accounts/roles.ts';
import { type AppRecord, findAppByClientId } from '../../apps/registry.ts';
import { activeOptionalScopes } from '../../apps/versions.ts';
import {
  isLoopback,
  isMetadataDocumentId,
  metadataDocumentClient,
  redirectAllowed,
} from '../client-metadata.ts';
import { OAuthError, UntrustedRedirectError } from '../errors.ts';
import { CODE_CHALLENGE } from '../pkce.ts';
import { type Resource, requestedResource, resourceUrl } from '../resource.ts';

/** A checked authorization request (OAuth 2.1 section 4.1.1). */
export interface AuthorizationRequest {
  app: AppRecord;
  redirectUri: string;
  /** Null only for an agent client, which may leave it out (PKCE protects its redirect). */
  state: string | null;
  codeChallenge: string;
  scopes: Scope[];
  /**
   * The request names optional scopes of the app's manifest: an installed app asks for more, and
   * the approval adds them to what the installation already holds (CONTRACT.md, optional scopes).
   */
  widens: boolean;
  /** RFC 8707: what the tokens will be for; when the request names none, `v1` (`mcp` for an agent). */
  resource: Resource;
  resourceUrl: string;
  /** For an agent client (no developer, decision 0036): who it is as far as Waybill knows. */
  agentClient: AgentClientIdentity | null;
}

/** What the consent page may say of an agent client: only what Waybill checked is shown as fact. */
export interface AgentClientIdentity {
  /** `metadata_document`: served from its client_id's host; `registration`: self-described. */
  source: 'metadata_document' | 'registration';
  /** The host its metadata document is served from; null for a registration (it has none). */
  clientHost: string | null;
  /** Where the person is sent after deciding: the redirect's host, or the app a private-use scheme opens. */
  redirectTarget: string;
  /** Every redirect returns to this computer (loopback or an app's own scheme). */
  loopbackOnly: boolean;
}

/** Where a redirect URI sends the person, in words: its host, or the app scheme (never empty). */
export function redirectTarget(uri: string): string {
  const url = new URL(uri);
  if ((url.protocol === 'https:' || url.protocol === 'http:') && url.host !== '') return url.host;
  return `an app on this device (${url.protocol.slice(0, -1)}: links)`;
}

/** Sent back to the client's verified redirect URI (RFC 6749 section 4.1.2.1). */
export class RedirectedError extends Error {
  readonly redirectUri: string;
  readonly state: string | null;
  readonly error: OAuthError;

  constructor(redirectUri: string, state: string | null, error: OAuthError) {
    super(error.message);
    this.name = 'RedirectedError';
    this.redirectUri = redirectUri;
    this.state = state;
    this.error = error;
  }
}

type Query = Record<string, unknown>;

/** The longest `state` taken back to the client (it travels in the redirect's Location). */
const MAX_STATE_LENGTH = 1000;

function single(query: Query, name: string): string | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  // RFC 6749 section 3.1: parameters MUST NOT be included more than once.
  if (typeof value !== 'string') throw new OAuthError('invalid_request', `${name} is repeated`);
  return value;
}

/**
 * The checks of an authorization request, in order. Run on the consent page's GET and again on
 * its POST: the hidden fields travel through the browser and are never trusted.
 */
export async function checkAuthorizationRequest(
  ctx: AppContext,
  query: Query,
  address: string,
): Promise<AuthorizationRequest> {
  let clientId: string | undefined;
  let redirectUri: string | undefined;
  try {
    clientId = single(query, 'client_id');
    redirectUri = single(query, 'redirect_uri');
  } catch {
    throw new UntrustedRedirectError('The request names its client or redirect URI more than once.');
  }
  // RFC 6749 section 4.1.2.1: an unknown client is never redirected to.
  if (!clientId || clientId.length > 2000)
    throw new UntrustedRedirectError('The request names no known app.');
  // CONTRACT.md (Agents): a client_id that is an https URL with a path is its metadata document.
  const fromDocument = isMetadataDocumentId(clientId);
  const app = fromDocument
    ? await metadataDocumentClient(ctx, clientId, address)
    : await findAppByClientId(ctx, clientId);
  if (!app) throw new UntrustedRedirectError('The request names no known app.');
  // OAuth 2.1 section 2.3.1 and RFC 9700 section 4.1.3: exact string comparison, no normalising
  // (a metadata document's loopback redirect on any port, RFC 8252 section 7.3).
  const allowed = fromDocument
    ? redirectUri !== undefined && redirectAllowed(app.redirect_uris, redirectUri)
    : redirectUri !== undefined && app.redirect_uris.includes(redirectUri);
  if (!redirectUri || !allowed) {
    throw new UntrustedRedirectError(
      fromDocument
        ? "The redirect URI is not among the client's metadata document's redirect_uris."
        : 'The redirect URI is not registered for this app.',
    );
  }
  // Decision 0036: an agent client is an app without a developer.
  const agent = app.developer_id === null;
  const agentClient: AgentClientIdentity | null = agent
    ? {
        source: fromDocument ? 'metadata_document' : 'registration',
        clientHost: fromDocument ? new URL(clientId).host : null,
        redirectTarget: redirectTarget(redirectUri),
        loopbackOnly: app.redirect_uris.every((uri) => isLoopback(uri) || !/^https?:/i.test(uri)),
      }
    : null;
  // Spec 3.2: a suspended app cannot be authorized (and its redirect is no longer trusted).
  if (app.status === 'suspended') throw new UntrustedRedirectError('This app is suspended.', 403);

  let state: string | null = null;
  try {
    state = single(query, 'state') ?? null;
    // The refusal would carry state back in the Location header, and one of tens of kilobytes is
    // more than clients and proxies read: an over-long state is shown on the error page instead.
    if (state !== null && state.length > MAX_STATE_LENGTH) {
      throw new UntrustedRedirectError(`The state parameter is longer than ${MAX_STATE_LENGTH} characters.`);
    }
    // OAuth 2.1 section 4.1.1: response_type=code is the only one.
    const responseType = single(query, 'response_type');
    if (!responseType) throw new OAuthError('invalid_request', 'response_type is required');
    if (responseType !== 'code') {
      throw new OAuthError('unsupported_response_type', 'only response_type=code is supported');
    }
    // Spec 5.6: state is mandatory (CSRF protection of the client's redirect endpoint). An agent
    // client may leave it out (every MCP revision makes it a SHOULD; OAuth 2.1 section 7.5.1 lets
    // PKCE, required below of every client, stand in for it).
    if (!state && !agent) throw new OAuthError('invalid_request', 'state is required');
    // RFC 7636 section 4.4.1 and spec 5.6: PKCE is mandatory, S256 only (plain is refused).
    const codeChallenge = single(query, 'code_challenge');
    if (!codeChallenge || !CODE_CHALLENGE.test(codeChallenge)) {
      throw new OAuthError(
        'invalid_request',
        'code_challenge must be the 43-character base64url SHA-256 of the verifier',
      );
    }
    if (single(query, 'code_challenge_method') !== 'S256') {
      throw new OAuthError('invalid_request', 'code_challenge_method must be S256');
    }
    // RFC 6749 section 3.3: only scopes the app registered, required or optional (its manifest);
    // none asked means the required ones.
    const asked = single(query, 'scope');
    const scopes = asked === undefined ? [...app.scopes] : [...new Set(asked.split(' ').filter(Boolean))];
    const optional = fromDocument ? [] : await activeOptionalScopes(ctx.db, app.id);
    const foreign = scopes.filter((s) => !isScope(s) || !(app.scopes.includes(s) || optional.includes(s)));
    if (foreign.length > 0 || scopes.length === 0) {
      throw new OAuthError(
        'invalid_scope',
        `the app may not ask for ${foreign.join(' ').slice(0, 200) || 'nothing'}`,
      );
    }
    // RFC 8707 section 2: one resource, ours; none means the REST API, as before (CONTRACT.md,
    // Agents). An agent client reaches /mcp only: none means /mcp, and /v1 is not its to ask.
    const resource = requestedResource(ctx.config, single(query, 'resource'), agent ? 'mcp' : 'v1');
    if (agent && resource !== 'mcp') {
      throw new OAuthError(
        'invalid_target',
        `an agent client may ask only for ${resourceUrl(ctx.config, 'mcp')}`,
      );
    }
    return {
      app,
      redirectUri,
      state,
      codeChallenge,
      scopes: scopes as Scope[],
      widens: scopes.some((s) => optional.includes(s as Scope) && !app.scopes.includes(s as Scope)),
      resource,
      agentClient,
      resourceUrl: resourceUrl(ctx.config, resource),
    };
  } catch (error) {
    if (error instanceof OAuthError) throw new RedirectedError(redirectUri, state, error);
    throw error;
  }
}

/**
 * The redirect back to the client (RFC 6749 section 4.1.2) with `iss` (RFC 9207 section 2), added
 * to whatever query the registered URI already has.
 */
export function clientRedirect(
  ctx: AppContext,
  redirectUri: string,
  params: Record<string, string | null>,
): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params))
    if (value !== null) url.searchParams.append(name, value);
  url.searchParams.append('iss', ctx.config.baseUrl);
  return url.href;
}
