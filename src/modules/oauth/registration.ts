import type { AppContext } from '../../context.ts';
import { addMs, HOUR } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import { textFault } from '../../lib/text.ts';
import { isScope, SCOPES } from '../accounts/roles.ts';
import { saveAgentApp } from './client-metadata.ts';

/** RFC 7591 section 3.2.2: the registration errors. */
export class RegistrationError extends Error {
  readonly code: 'invalid_redirect_uri' | 'invalid_client_metadata';
  constructor(code: 'invalid_redirect_uri' | 'invalid_client_metadata', description: string) {
    super(description);
    this.name = 'RegistrationError';
    this.code = code;
  }
}

/** CONTRACT.md (Agents): 10 registrations an hour per address. */
export const REGISTRATIONS_PER_HOUR = 10;
/** A registration no person approved within this long is removed by housekeeping. */
export const UNUSED_REGISTRATION_MS = 24 * HOUR;

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * RFC 8252 and CONTRACT.md: a web client's redirect is https; a native one may use loopback http
 * (any port) or a private-use scheme (a reverse domain name, RFC 8252 section 7.1). No fragment.
 */
export function redirectUriProblem(value: unknown, native: boolean): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2000) return 'is not a URL';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.hash !== '' || value.includes('#')) return 'has a fragment';
  if (url.protocol === 'https:') return null;
  if (!native) return 'must use https (set application_type native for a loopback or app redirect)';
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return null;
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)) return null;
  return 'must use https, loopback http or a private-use scheme (com.example.app:/callback)';
}

export interface Registered {
  client_id: string;
  client_id_issued_at: number;
  client_name: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: 'none';
  application_type: 'web' | 'native';
  scope: string;
  client_uri?: string;
}

function stringList(value: unknown, name: string, allowed: readonly string[]): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && allowed.includes(v))) {
    throw new RegistrationError('invalid_client_metadata', `${name} may hold only ${allowed.join(', ')}`);
  }
  return [...new Set(value as string[])];
}

/** Checks a registration request (RFC 7591 section 2) into what is stored; nothing is stored on error. */
export function checkRegistration(body: unknown): Omit<Registered, 'client_id' | 'client_id_issued_at'> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new RegistrationError('invalid_client_metadata', 'send the client metadata as a JSON object');
  }
  const meta = body as Record<string, unknown>;
  const method = meta.token_endpoint_auth_method ?? 'none';
  if (method !== 'none') {
    throw new RegistrationError(
      'invalid_client_metadata',
      'only public clients register here: token_endpoint_auth_method must be none',
    );
  }
  const type = meta.application_type ?? 'web';
  if (type !== 'web' && type !== 'native') {
    throw new RegistrationError('invalid_client_metadata', 'application_type is web or native');
  }
  const uris = meta.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) {
    throw new RegistrationError('invalid_redirect_uri', 'redirect_uris must list 1 to 10 URLs');
  }
  for (const uri of uris) {
    const problem = redirectUriProblem(uri, type === 'native');
    if (problem)
      throw new RegistrationError('invalid_redirect_uri', `${String(uri).slice(0, 200)} ${problem}`);
  }
  const grantTypes = stringList(meta.grant_types, 'grant_types', ['authorization_code', 'refresh_token']) ?? [
    'authorization_code',
    'refresh_token',
  ];
  if (!grantTypes.includes('authorization_code')) {
    throw new RegistrationError('invalid_client_metadata', 'grant_types must include authorization_code');
  }
  const responseTypes = stringList(meta.response_types, 'response_types', ['code']) ?? ['code'];
  const name = meta.client_name ?? 'Unnamed agent';
  if (
    typeof name !== 'string' ||
    name.trim() === '' ||
    name.length > 100 ||
    textFault(name, 'line') !== null
  ) {
    throw new RegistrationError('invalid_client_metadata', 'client_name is text of at most 100 characters');
  }
  // An agent may ask for any scope, as a metadata-document client may: the person's consent decides
  // what it gets. A registration's `scope` is what the client asks first (an SDK client copies the
  // 401's `scope="shipments:read"`); binding it would refuse the step-up of the first write.
  // RFC 7591 section 3.2.1 lets the server answer other metadata than asked.
  const scope = SCOPES.join(' ');
  if (meta.scope !== undefined) {
    const asked = typeof meta.scope === 'string' ? meta.scope.split(' ').filter(Boolean) : null;
    if (!asked || asked.length === 0 || !asked.every(isScope)) {
      throw new RegistrationError('invalid_client_metadata', `scope may hold only ${SCOPES.join(' ')}`);
    }
  }
  let clientUri: string | undefined;
  if (meta.client_uri !== undefined) {
    if (
      typeof meta.client_uri !== 'string' ||
      !/^https:\/\//i.test(meta.client_uri) ||
      meta.client_uri.length > 500
    ) {
      throw new RegistrationError('invalid_client_metadata', 'client_uri must be an https URL');
    }
    clientUri = meta.client_uri;
  }
  return {
    client_name: name.trim(),
    redirect_uris: uris as string[],
    grant_types: grantTypes,
    response_types: responseTypes,
    token_endpoint_auth_method: 'none',
    application_type: type,
    scope,
    ...(clientUri ? { client_uri: clientUri } : {}),
  };
}

/** Whether this address may register now (counted in the database: every API process agrees). */
export async function registrationAllowed(ctx: AppContext, address: string): Promise<boolean> {
  const row = await ctx.db
    .selectFrom('agent_clients')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('registered_from', '=', address)
    .where('created_at', '>', addMs(ctx.clock.now(), -HOUR))
    .executeTakeFirstOrThrow();
  return Number(row.n) < REGISTRATIONS_PER_HOUR;
}

/** RFC 7591 section 3: registers a public agent client, an app without a developer or listing. */
export async function registerClient(ctx: AppContext, body: unknown, address: string): Promise<Registered> {
  const checked = checkRegistration(body);
  const now = ctx.clock.now();
  const id = newId('app');
  await ctx.db.transaction().execute(async (trx) => {
    await saveAgentApp(ctx, trx, {
      id,
      name: checked.client_name,
      redirectUris: checked.redirect_uris,
      scopes: checked.scope.split(' '),
      homepage: checked.client_uri ?? null,
    });
    await trx
      .insertInto('agent_clients')
      .values({
        app_id: id,
        source: 'registration',
        metadata: JSON.stringify(checked),
        metadata_expires_at: null,
        registered_from: address,
        first_approved_at: null,
        created_at: now,
      })
      .execute();
  });
  return { client_id: id, client_id_issued_at: Math.floor(now.getTime() / 1000), ...checked };
}

/** Housekeeping: registrations no person approved within 24 h go (their app row, and nothing else). */
export async function purgeUnusedRegistrations(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .deleteFrom('apps')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('agent_clients')
        .select('app_id')
        .where('source', '=', 'registration')
        .where('first_approved_at', 'is', null)
        .where('created_at', '<', addMs(ctx.clock.now(), -UNUSED_REGISTRATION_MS)),
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
