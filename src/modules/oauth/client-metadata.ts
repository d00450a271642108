import { request } from 'undici';
import type { AppContext, Trx } from '../../context.ts';
import { GuardRefusal, urlShapeProblem } from '../../delivery/guard.ts';
import { guardedAgent } from '../../delivery/sender.ts';
import { addMs, HOUR, SECOND } from '../../lib/clock.ts';
import { newSecret } from '../../lib/ids.ts';
import { textFault } from '../../lib/text.ts';
import { SCOPES } from '../accounts/roles.ts';
import { type AppRecord, findAppByClientId } from '../apps/registry.ts';
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
      throw refuse(`it answered ${response.statusCode} (a redirect, which is not followed)`);
    }
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw refuse(`it answered ${response.statusCode}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body) {
      size += (chunk as Buffer).length;
      if (size > MAX_DOCUMENT_BYTES) {
        response.body.destroy();
        throw refuse('it is larger than 64 KB');
      }
      chunks.push(chunk as Buffer);
    }
    text = Buffer.concat(chunks).toString('utf8');
    cacheControl = response.headers['cache-control'];
  } catch (error) {
    if (error instanceof UntrustedRedirectError) throw error;
    if (error instanceof GuardRefusal || (error as { cause?: unknown }).cause instanceof GuardRefusal) {
      throw refuse('its address is not allowed (private, loopback or reserved)');
    }
    throw refuse('it could not be fetched');
  } finally {
    clearTimeout(timer);
    void agent.close();
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw refuse('it is not JSON');
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
  if (
    typeof name !== 'string' ||
    name.trim() === '' ||
    name.length > 100 ||
    textFault(name, 'line') !== null
  ) {
    throw refuse('it has no client_name of at most 100 characters');
  }
  const uris = doc.redirect_uris;
  if (
    !Array.isArray(uris) ||
    uris.length === 0 ||
    uris.length > 10 ||
    !uris.every((u) => typeof u === 'string' && u.length <= 2000)
  ) {
    throw refuse('it lists no redirect_uris');
  }
  const method = doc.token_endpoint_auth_method;
  if (method !== undefined && method !== 'none') throw refuse('token_endpoint_auth_method must be none');
  const clientUri =
    typeof doc.client_uri === 'string' && /^https:\/\//i.test(doc.client_uri) ? doc.client_uri : undefined;
  return {
    client_id: clientId,
    client_name: name.trim(),
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
 * The client of an authorization request whose client_id is a metadata document URL: the cached
 * document while it holds, else fetched and checked again. Anything wrong: the error page's reason.
 */
export async function metadataDocumentClient(ctx: AppContext, clientId: string): Promise<AppRecord> {
  const now = ctx.clock.now();
  const cached = await ctx.db
    .selectFrom('agent_clients')
    .select('metadata_expires_at')
    .where('app_id', '=', clientId)
    .where('source', '=', 'metadata_document')
    .executeTakeFirst();
  if (!cached?.metadata_expires_at || cached.metadata_expires_at <= now) {
    const { document, expiresMs } = await fetchClientDocument(ctx, clientId);
    await ctx.db.transaction().execute(async (trx) => {
      await saveAgentApp(ctx, trx, {
        id: clientId,
        name: document.client_name,
        redirectUris: document.redirect_uris,
        scopes: [...SCOPES],
        homepage: document.client_uri ?? null,
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
  const app = await findAppByClientId(ctx, clientId);
  if (!app) throw refuse('it could not be stored');
  return app;
}
