import type { Config } from '../../config.ts';
import type { AppContext } from '../../context.ts';
import { OAuthError } from './errors.ts';

/** The resources a grant may be for (RFC 8707): the REST API or the MCP server. */
export const RESOURCES = ['v1', 'mcp'] as const;
export type Resource = (typeof RESOURCES)[number];

/** The URL that names a resource: `{base_url}/v1` or `{base_url}/mcp` (CONTRACT.md, Agents). */
export function resourceUrl(config: Readonly<Config>, resource: Resource): string {
  return `${config.baseUrl}/${resource}`;
}

/**
 * RFC 8707 section 2: a `resource` parameter is an absolute URI without a fragment. It names one of
 * our two resources: scheme and host compare case-insensitively (the URL parser lowers them), the
 * default port is the same as none, and one trailing slash is ignored. Anything else: invalid_target.
 */
export function parseResource(config: Readonly<Config>, value: string): Resource {
  const refuse = () =>
    new OAuthError(
      'invalid_target',
      `resource must be ${resourceUrl(config, 'mcp')} or ${resourceUrl(config, 'v1')}`,
    );
  if (value.length > 2048 || value.includes('#')) throw refuse();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw refuse();
  }
  const base = new URL(config.baseUrl);
  if (url.origin !== base.origin || url.search !== '' || url.username !== '' || url.password !== '')
    throw refuse();
  const basePath = base.pathname.replace(/\/$/, '');
  const path = url.pathname.endsWith('/') ? url.pathname.slice(0, -1) : url.pathname;
  for (const resource of RESOURCES) if (path === `${basePath}/${resource}`) return resource;
  throw refuse();
}

/**
 * The `resource` of a token request (RFC 8707 section 2.2: it may repeat the grant's, never change
 * it), undefined when absent. An agent client, one without a developer, reaches /mcp only
 * (CONTRACT.md, Agents): naming /v1 is invalid_target whatever its grant.
 */
export function tokenRequestResource(
  config: Readonly<Config>,
  client: { developer_id: string | null },
  params: ReadonlyMap<string, string>,
): Resource | undefined {
  const value = params.get('resource');
  if (value === undefined) return undefined;
  const resource = parseResource(config, value);
  if (resource === 'v1' && client.developer_id === null)
    throw new OAuthError(
      'invalid_target',
      `an agent client's tokens are for ${resourceUrl(config, 'mcp')} only`,
    );
  return resource;
}

/** The resource of a request: the one named, or `fallback` (the grant's; `v1` on authorize). */
export function requestedResource(
  config: Readonly<Config>,
  value: string | undefined,
  fallback: Resource,
): Resource {
  return value === undefined ? fallback : parseResource(config, value);
}

/**
 * The fast path's reading of a token request's `resource`: undefined when absent (the grant's),
 * null when it is not one of ours (the full way explains with invalid_target).
 */
export function fastResource(
  ctx: AppContext,
  params: ReadonlyMap<string, string>,
): Resource | undefined | null {
  const value = params.get('resource');
  if (value === undefined) return undefined;
  try {
    return parseResource(ctx.config, value);
  } catch {
    return null;
  }
}
