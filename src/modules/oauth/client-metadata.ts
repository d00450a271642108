import { request } from 'undici';
import type { AppContext, Trx } from '../../context.ts';
import { GuardRefusal, urlShapeProblem } from '../../delivery/guard.ts';
import { guardedAgent } from '../../delivery/sender.ts';
import { addMs, HOUR, MINUTE, SECOND } from '../../lib/clock.ts';
import { newSecret } from '../../lib/ids.ts';
import { SCOPES } from '../accounts/roles.ts';
import { type AppRecord, findAppByClientId } from '../apps/registry.ts';
import { takeAddressPlace } from './address-limit.ts';
import { UntrustedRedirectError } from './errors.ts';

/** CONTRACT.md (Agents): 5 s, 64 KB, cached between 30 s and 24 h as its Cache-Control says. */
const FETCH_DEADLINE_MS = 5 * SECOND;
const MAX_DOCUMENT_BYTES = 64 * 1024;
const MIN_CACHE_MS = 30 * SECOND;
const MAX_CACHE_MS = 24 * HOUR;

/** A client_id that names a Client ID Metadata Document: an https URL with a path. */
export function isMetadataDocumentId(clientId: string): boolean {
  if (!clientId.startsWith('https://') || clientId.length > 2000) return false;
  try {
    const url = new URL(clientId);
    return url.pathname !== '/' && url.hash === '' && !clientId.includes('#');
  } catch {
    return false;
  }
}

/** A loopback redirect, whose port a native client picks at run time (RFC 8252 section 7.3). */
export function isLoopback(uri: string): boolean {
  try {
    const url = new URL(uri);
    return url.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  } catch {
    return false;
  }
}

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
  if (!native) return 'must use https (loopback http and private-use schemes are for native clients)';
  if (url.protocol === 'http:' && isLoopback(value)) return null;
  if (/^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol)) return null;
  return 'must use https, loopback http or a private-use scheme (com.example.app:/callback)';
}

/**
 * The application type of a client that names none. MCP 2025-06-18 and 2025-11-25 never mention
 * application_type: a client returning only to loopback or its own scheme is native (OpenID's web
 * default is about browser clients of the implicit grant).
 */
export function impliedApplicationType(uris: readonly unknown[]): 'web' | 'native' {
  const nativeOnly = uris.every(
    (uri) => redirectUriProblem(uri, true) === null && redirectUriProblem(uri, false) !== null,
  );
  return nativeOnly ? 'native' : 'web';
}

/**
 * Names a person reads on the consent page and the Agents list: no control characters (C0, DEL,
 * C1), no format characters (bidirectional controls such as U+202E, which make a name read as
 * another, "Trusted\u202Etnega"; zero-width spaces and joiners, the soft hyphen, word joiners, the
 * BOM and tag characters, which hide in it), no line or paragraph separators, no private-use
 * characters, and none of the blank fillers that draw nothing (Hangul fillers, the Braille blank).
 */
const NAME_CONTROLS = /[\p{Cc}\p{Cf}\p{Co}\p{Zl}\p{Zp}\u115f\u1160\u3164\uffa0\u2800]/u;

/** Why an agent's self-chosen name cannot be shown, or null when it can. */
export function clientNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.trim() === '' || name.length > 100 || !name.isWellFormed())
    return 'client_name is text of at most 100 characters';
  if (NAME_CONTROLS.test(name))
    return 'client_name must not contain control, bidirectional or invisible characters';
  return null;
}

/** The redirect URI matches one of the document's exactly, or the same loopback URL on any port. */
export function redirectAllowed(registered: readonly string[], redirectUri: string): boolean {
  if (registered.includes(redirectUri)) return true;
  if (!isLoopback(redirectUri)) return false;
  const withoutPort = (uri: string) => {
    const url = new URL(uri);
    url.port = '';
    return url.href;
  };
  return registered.some((r) => isLoopback(r) && withoutPort(r) === withoutPort(redirectUri));
}

interface ClientDocument {
  client_id: string;
  client_name: string;
  redirect_uris: string[];
  client_uri?: string;
}

/**
 * One answer for every way a fetch fails (a redirect, a refused address, too large, not 200, not
 * JSON, no answer): the page must not tell apart what lives at an address (review finding I2).
 */
const UNFETCHABLE =
  'it could not be fetched as a JSON document of at most 64 KB from a public https address, without redirects';

const refuse = (reason: string) =>
  new UntrustedRedirectError(`The client's metadata document cannot be used: ${reason}.`);

/** How long a document holds: its max-age, between 30 s and 24 h (no-store and no header: 30 s). */
function cacheMs(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  const maxAge = /(?:^|,)\s*max-age\s*=\s*(\d+)/i.exec(value)?.[1];
  const ms = /no-store|no-cache/i.test(value) || maxAge === undefined ? 0 : Number(maxAge) * SECOND;
  return Math.min(MAX_CACHE_MS, Math.max(MIN_CACHE_MS, ms));
}

/** Fetches and checks a document through the URL guard (no redirects, 5 s, 64 KB); throws the reason. */
export async function fetchClientDocument(
  ctx: AppContext,
  clientId: string,
): Promise<{ document: ClientDocument; expiresMs: number }> {
  const url = new URL(clientId);
  const shape = urlShapeProblem(url, ctx.config.webhookAllowPrivate);
  if (shape) throw refuse(shape);
  const agent = guardedAgent(ctx, {
    deadlineMs: FETCH_DEADLINE_MS,
    connectionsPerOrigin: 1,
    ...(ctx.outboundCa ? { ca: ctx.outboundCa } : {}),
  });
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), FETCH_DEADLINE_MS);
  let text: string;
  let cacheControl: string | string[] | undefined;
  try {
    const response = await request(clientId, {
      method: 'GET',
      headers: { accept: 'application/json' },
      dispatcher: agent,
      signal: controller.signal,
    });
    if (response.statusCode >= 300 && response.statusCode < 400) {
      await response.body.dump();
      throw refuse(UNFETCHABLE);
    }
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw refuse(UNFETCHABLE);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_DOCUMENT_BYTES) {
        response.body.destroy();
        throw refuse(UNFETCHABLE);
      }
      chunks.push(chunk as Buffer);
    }
    text = Buffer.concat(chunks).toString('utf8');
    cacheControl = response.headers['cache-control'];
  } catch (error) {
    if (error instanceof UntrustedRedirectError) throw error;
    if (error instanceof GuardRefusal || (error as { cause?: unknown }).cause instanceof GuardRefusal) {
      throw refuse(UNFETCHABLE);
    }
    throw refuse(UNFETCHABLE);
  } finally {
    clearTimeout(timer);
    void agent.close();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw refuse(UNFETCHABLE);
  }
  return { document: checkDocument(clientId, parsed), expiresMs: cacheMs(cacheControl) };
}

function checkDocument(clientId: string, parsed: unknown): ClientDocument {
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw refuse('it is not a JSON object');
  const doc = parsed as Record<string, unknown>;
  // Exactly the URL it was fetched from: not another path, not a slash more or less.
  if (doc.client_id !== clientId) throw refuse('its client_id is not the URL it was fetched from');
  const name = doc.client_name;
  const nameProblem = clientNameProblem(name);
  if (nameProblem) throw refuse(nameProblem);
  const uris = doc.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10) {
    throw refuse('it lists no redirect_uris (1 to 10)');
  }
  // Checked as a registration's are: no javascript:, data: or file:, no plain http off loopback.
  const type = doc.application_type ?? impliedApplicationType(uris);
  if (type !== 'web' && type !== 'native') throw refuse('application_type is web or native');
  for (const uri of uris) {
    const problem = redirectUriProblem(uri, type === 'native');
    if (problem) throw refuse(`one of its redirect_uris ${problem}`);
  }
  const method = doc.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') throw refuse('token_endpoint_auth_method must be none');
  const clientUri =
    typeof doc.client_uri === 'string' && /^https:\/\//i.test(doc.client_uri) ? doc.client_uri : undefined;
  return {
    client_id: clientId,
    client_name: (name as string).trim(),
    redirect_uris: uris as string[],
    ...(clientUri ? { client_uri: clientUri } : {}),
  };
}

/** The apps row of an agent client (no developer, no listing, no events), created or updated. */
export async function saveAgentApp(
  ctx: AppContext,
  trx: Trx,
  input: { id: string; name: string; redirectUris: string[]; scopes: string[]; homepage: string | null },
): Promise<void> {
  const now = ctx.clock.now();
  await trx
    .insertInto('apps')
    .values({
      id: input.id,
      developer_id: null,
      name: input.name,
      description: '',
      homepage_url: input.homepage,
      privacy_url: null,
      support_url: null,
      redirect_uris: JSON.stringify(input.redirectUris),
      scopes: JSON.stringify(input.scopes),
      kind: 'public',
      client_secret_hash: null,
      events_url: null,
      // Never used (an agent client gets no app events), but the column holds a sealed secret.
      events_secret_sealed: ctx.secrets.seal(newSecret('aps_')),
      events_previous_secret_sealed: null,
      events_previous_secret_expires_at: null,
      status: 'private',
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc.column('id').doUpdateSet({
        name: input.name,
        homepage_url: input.homepage,
        redirect_uris: JSON.stringify(input.redirectUris),
        updated_at: now,
      }),
    )
    .execute();
}

/**
 * Fetches a document for an address key at most this often a minute: anyone, signed in or not,
 * can name any URL as a client_id, and Waybill must not become their fetcher (issue 39).
 */
export const DOCUMENT_FETCHES_PER_MINUTE = 10;
/** A document that could not be used is not fetched again for this long. */
export const DOCUMENT_FAILURE_MS = MINUTE;

/** The document fetched, checked and stored (its app row and its agent_clients row). */
async function refreshDocument(ctx: AppContext, clientId: string, now: Date): Promise<void> {
  const { document, expiresMs } = await fetchClientDocument(ctx, clientId);
  await ctx.db.transaction().execute(async (trx) => {
    await saveAgentApp(ctx, trx, {
      id: clientId,
      name: document.client_name,
      redirectUris: document.redirect_uris,
      scopes: [...SCOPES],
      // The document's client_uri is its claim; the client is known by its URL's host.
      homepage: null,
    });
    await trx
      .insertInto('agent_clients')
      .values({
        app_id: clientId,
        source: 'metadata_document',
        metadata: JSON.stringify(document),
        metadata_expires_at: addMs(now, expiresMs),
        registered_from: null,
        first_approved_at: null,
        created_at: now,
      })
      .onConflict((oc) =>
        oc
          .column('app_id')
          .doUpdateSet({ metadata: JSON.stringify(document), metadata_expires_at: addMs(now, expiresMs) }),
      )
      .execute();
  });
}

/**
 * The client of an authorization request whose client_id is a metadata document URL: the cached
 * document while it holds, else fetched and checked again (within the address key's fetches of
 * the minute). Anything wrong: the error page's reason, remembered for a minute.
 */
export async function metadataDocumentClient(
  ctx: AppContext,
  clientId: string,
  address: string,
): Promise<AppRecord> {
  const now = ctx.clock.now();
  const cached = await ctx.db
    .selectFrom('agent_clients')
    .select('metadata_expires_at')
    .where('app_id', '=', clientId)
    .where('source', '=', 'metadata_document')
    .executeTakeFirst();
  if (!cached?.metadata_expires_at || cached.metadata_expires_at <= now) {
    const failed = await ctx.db
      .selectFrom('client_document_failures')
      .select('reason')
      .where('client_id', '=', clientId)
      .where('until', '>', now)
      .executeTakeFirst();
    if (failed) throw new UntrustedRedirectError(failed.reason);
    const retryAfter = await takeAddressPlace(
      ctx,
      'client-document',
      address,
      DOCUMENT_FETCHES_PER_MINUTE,
      MINUTE,
    );
    if (retryAfter !== null) {
      throw new UntrustedRedirectError(
        `Too many client metadata documents were fetched for your address; try again in ${retryAfter} s.`,
        429,
      );
    }
    try {
      await refreshDocument(ctx, clientId, now);
    } catch (error) {
      if (!(error instanceof UntrustedRedirectError)) throw error;
      const until = addMs(now, DOCUMENT_FAILURE_MS);
      await ctx.db
        .insertInto('client_document_failures')
        .values({ client_id: clientId, reason: error.message, until })
        .onConflict((oc) => oc.column('client_id').doUpdateSet({ reason: error.message, until }))
        .execute();
      throw error;
    }
  }
  const app = await findAppByClientId(ctx, clientId);
  if (!app) throw refuse('it could not be stored');
  return app;
}

/** Forgets failures whose minute is over; housekeeping. */
export async function purgeDocumentFailures(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .deleteFrom('client_document_failures')
    .where('until', '<=', ctx.clock.now())
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
