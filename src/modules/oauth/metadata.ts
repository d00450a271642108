import type { Config } from '../../config.ts';
import { SCOPES } from '../accounts/roles.ts';

const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'none'];

/** RFC 8414 section 2, as CONTRACT.md's OAuth section says; advertises only what is supported. */
export function authorizationServerMetadata(config: Readonly<Config>) {
  return {
    // RFC 8414 section 2: the issuer, no query or fragment; RFC 9207: also the `iss` of redirects.
    issuer: config.baseUrl,
    authorization_endpoint: `${config.webUrl}/oauth/authorize`,
    token_endpoint: `${config.baseUrl}/oauth/token`,
    revocation_endpoint: `${config.baseUrl}/oauth/revoke`,
    // RFC 7591: public agent clients register here when they have no metadata document.
    registration_endpoint: `${config.baseUrl}/oauth/register`,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: AUTH_METHODS,
    authorization_response_iss_parameter_supported: true,
    // CONTRACT.md (Agents): a client_id may be the URL of its metadata document.
    client_id_metadata_document_supported: true,
  };
}
