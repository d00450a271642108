import type { AppContext } from '../../context.ts';
import { addMs, HOUR } from '../../lib/clock.ts';
import { newId } from '../../lib/ids.ts';
import { isScope, SCOPES } from '../accounts/roles.ts';
import { takeAddressPlace } from './address-limit.ts';
import {
  clientNameProblem,
  impliedApplicationType,
  redirectUriProblem,
  saveAgentApp,
} from './client-metadata.ts';

/** RFC 7591 section 3.2.2: the registration errors. */
export class RegistrationError extends Error {
  readonly code: 'invalid_redirect_uri' | 'invalid_client_metadata';
  constructor(code: 'invalid_redirect_uri' | 'invalid_client_metadata', description: string) {
    super(description);
    this.name = 'RegistrationError';
    this.code = code;
  }
}

/** CONTRACT.md (Agents): 10 registrations an hour per address key (an IPv6 /64 as one address). */
export const REGISTRATIONS_PER_HOUR = 10;
/** A registration no person approved within this long is removed by housekeeping. */
export const UNUSED_REGISTRATION_MS = 24 * HOUR;

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

/** RFC 7591 section 2: an empty optional string is no value (clients send `client_uri: ""`). */
function present(value: unknown): unknown {
  return value === '' || value === null ? undefined : value;
}

/** Checks a registration request (RFC 7591 section 2) into what is stored; nothing is stored on error. */
export function checkRegistration(body: unknown): Omit<Registered, 'client_id' | 'client_id_issued_at'> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new RegistrationError('invalid_client_metadata', 'send the client metadata as a JSON object');
  }
  const meta = body as Record<string, unknown>;
  // RFC 7591 section 3.2.1: the server may answer another method than asked; a client asking for
  // a secret gets none and is told so (CONTRACT.md, Agents: public clients only).
  const method = present(meta.token_endpoint_auth_method) ?? 'none';
  if (method !== 'none' && method !== 'client_secret_basic' && method !== 'client_secret_post') {
    throw new RegistrationError(
      'invalid_client_metadata',
      'only public clients register here: token_endpoint_auth_method must be none',
    );
  }
  const uris = meta.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) {
    throw new RegistrationError('invalid_redirect_uri', 'redirect_uris must list 1 to 10 URLs');
  }
  const type = present(meta.application_type) ?? impliedApplicationType(uris);
  if (type !== 'web' && type !== 'native') {
    throw new RegistrationError('invalid_client_metadata', 'application_type is web or native');
  }
  for (const uri of uris) {
    const problem = redirectUriProblem(uri, type === 'native');
    if (problem)
      throw new RegistrationError('invalid_redirect_uri', `${String(uri).slice(0, 200)} ${problem}`);
  }
  const grantTypes = stringList(present(meta.grant_types), 'grant_types', [
    'authorization_code',
    'refresh_token',
  ]) ?? ['authorization_code', 'refresh_token'];
  if (!grantTypes.includes('authorization_code')) {
    throw new RegistrationError('invalid_client_metadata', 'grant_types must include authorization_code');
  }
  const responseTypes = stringList(present(meta.response_types), 'response_types', ['code']) ?? ['code'];
  const name = present(meta.client_name) ?? 'Unnamed agent';
  const nameProblem = clientNameProblem(name);
  if (nameProblem) throw new RegistrationError('invalid_client_metadata', nameProblem);
  // An agent may ask for any scope, as a metadata-document client may: the person's consent decides
  // what it gets. A registration's `scope` is what the client asks first (an SDK client copies the
  // 401's `scope="shipments:read"`); binding it would refuse the step-up of the first write.
  // RFC 7591 section 3.2.1 lets the server answer other metadata than asked.
  const scope = SCOPES.join(' ');
  const askedScope = present(meta.scope);
  if (askedScope !== undefined) {
    const asked = typeof askedScope === 'string' ? askedScope.split(' ').filter(Boolean) : null;
    if (!asked || asked.length === 0 || !asked.every(isScope)) {
      throw new RegistrationError('invalid_client_metadata', `scope may hold only ${SCOPES.join(' ')}`);
    }
  }
  // Kept as the client's own claim: never shown as verified, never its host (CONTRACT.md, Agents).
  const clientUri = present(meta.client_uri);
  if (clientUri !== undefined) {
    if (typeof clientUri !== 'string' || !/^https:\/\//i.test(clientUri) || clientUri.length > 500) {
      throw new RegistrationError('invalid_client_metadata', 'client_uri must be an https URL');
    }
  }
  return {
    client_name: (name as string).trim(),
    redirect_uris: uris as string[],
    grant_types: grantTypes,
    response_types: responseTypes,
    token_endpoint_auth_method: 'none',
    application_type: type,
    scope,
    ...(clientUri ? { client_uri: clientUri as string } : {}),
  };
}

/** Refused: this address key registered REGISTRATIONS_PER_HOUR clients in the current hour. */
export class RegistrationLimitError extends Error {
  readonly retryAfterS: number;
  constructor(retryAfterS: number) {
    super('too many registrations from this address; try again within the hour');
    this.name = 'RegistrationLimitError';
    this.retryAfterS = retryAfterS;
  }
}

/**
 * RFC 7591 section 3: registers a public agent client, an app without a developer or listing. A
 * well-formed registration takes one of the address key's places of the hour (counted atomically,
 * so parallel requests never pass the limit), then is stored.
 */
export async function registerClient(ctx: AppContext, body: unknown, address: string): Promise<Registered> {
  const checked = checkRegistration(body);
  const retryAfter = await takeAddressPlace(ctx, 'registration', address, REGISTRATIONS_PER_HOUR, HOUR);
  if (retryAfter !== null) throw new RegistrationLimitError(retryAfter);
  const now = ctx.clock.now();
  const id = newId('app');
  await ctx.db.transaction().execute(async (trx) => {
    await saveAgentApp(ctx, trx, {
      id,
      name: checked.client_name,
      redirectUris: checked.redirect_uris,
      scopes: checked.scope.split(' '),
      // client_uri is the client's claim: kept in its metadata, never the app's homepage.
      homepage: null,
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
