import { createHmac } from 'node:crypto';
import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import type { AppContext } from '../context.ts';
import { canonicalJson } from '../lib/canonical-json.ts';
import { DAY, MINUTE } from '../lib/clock.ts';
import { derivedKey } from '../lib/crypto.ts';
import { AppError } from '../lib/errors.ts';
import { credentialKey } from '../modules/accounts/access.ts';

export const IDEMPOTENCY_TTL_MS = DAY;
/** No request runs this long; a claim without an answer older than this was abandoned. */
const ABANDONED_CLAIM_MS = 5 * MINUTE;

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { scope: string; key: string } | null;
  }
}

/**
 * What identifies "the same request" under one key: an HMAC-SHA256, under a key derived from the
 * secret key, of the method, the path and the body as canonical JSON (key order does not matter,
 * array order does). Keyed, so that a database reader cannot test guesses of what a body held;
 * canonical, so that a client that serialises the same body differently on a retry is not refused.
 */
function requestHash(hashKey: Buffer, request: FastifyRequest): string {
  return createHmac('sha256', hashKey)
    .update(`${request.method} ${request.url}\n${canonicalJson(request.body ?? null)}`)
    .digest('base64url');
}

/** Body fields that make a route a credentials route (sign-up, sign-in, anything taking a secret). */
const CREDENTIAL_FIELD = /password|secret/i;

/** Whether a body schema names a credential field at any depth (walked without recursion). */
function carriesCredentials(schema: unknown): boolean {
  const pending: unknown[] = [schema];
  const seen = new Set<unknown>();
  while (pending.length > 0) {
    const node = pending.pop();
    if (node === null || typeof node !== 'object' || seen.has(node)) continue;
    seen.add(node);
    const properties = (node as { properties?: unknown }).properties;
    if (properties && typeof properties === 'object') {
      if (Object.keys(properties).some((name) => CREDENTIAL_FIELD.test(name))) return true;
    }
    pending.push(...Object.values(node));
  }
  return false;
}

/**
 * `Idempotency-Key` on every POST of the API (CONTRACT.md): the same key with the same request
 * answers the first answer again; with another request, 409 idempotency.key_reused. Keys are
 * scoped to the credential that sent them and kept 24 h. Server errors are not kept, so a retry runs.
 *
 * Credentials routes (a body schema with a password or secret field: sign-up and sign-in) are kept
 * out: the key is ignored there and nothing about the request or its answer is stored. A stored
 * fingerprint of a password is an offline guessing aid, and a stored answer would be a session.
 */
export function registerIdempotency(app: FastifyInstance, ctx: AppContext): void {
  app.decorateRequest('idempotency', null);
  const hashKey = derivedKey(ctx.config.secretKey, 'idempotency request hash v1');
  const credentialsRoutes = new Set<string>();

  // Decided once per route from its schema, as routes are registered (after this hook is added).
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST') || !carriesCredentials(route.schema?.body)) return;
    credentialsRoutes.add(route.url);
  });

  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || !request.url.startsWith('/v1/')) return;
    if (credentialsRoutes.has(request.routeOptions.url ?? '')) return;
    const key = request.headers['idempotency-key'];
    if (typeof key !== 'string' || key === '') return;
    if (key.length > 255)
      throw new AppError('validation.failed', 'Idempotency-Key is at most 255 characters', {
        errors: [{ path: 'headers:/idempotency-key', message: 'must NOT have more than 255 characters' }],
      });
    const scope = request.principal ? credentialKey(request.principal) : `ip:${request.ip}`;
    const hash = requestHash(hashKey, request);
    const now = ctx.clock.now();
    // A key older than the window is forgotten, and so is a claim whose request died without an
    // answer (a crashed process): the same key then starts anew.
    await ctx.db
      .deleteFrom('idempotency_keys')
      .where('scope', '=', scope)
      .where('key', '=', key)
      .where((eb) =>
        eb.or([
          eb('created_at', '<', new Date(now.getTime() - IDEMPOTENCY_TTL_MS)),
          eb.and([
            eb('response_status', 'is', null),
            eb('created_at', '<', new Date(now.getTime() - ABANDONED_CLAIM_MS)),
          ]),
        ]),
      )
      .execute();
    const claimed = await ctx.db
      .insertInto('idempotency_keys')
      .values({ scope, key, request_hash: hash, response_status: null, response_body: null, created_at: now })
      .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    if (claimed) {
      request.idempotency = { scope, key };
      return;
    }
    const stored = await ctx.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('scope', '=', scope)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!stored) throw new AppError('idempotency.in_progress');
    if (stored.request_hash !== hash) throw new AppError('idempotency.key_reused');
    if (stored.response_status === null) throw new AppError('idempotency.in_progress');
    const body = stored.response_body ? ctx.secrets.open(stored.response_body) : '';
    reply
      .code(stored.response_status)
      .header('idempotent-replayed', 'true')
      .type(stored.response_status >= 400 ? 'application/problem+json' : 'application/json');
    return reply.send(body);
  });

  app.addHook('onSend', async (request, reply, payload) => {
    const claim = request.idempotency;
    if (!claim) return payload;
    request.idempotency = null;
    const where = ctx.db
      .updateTable('idempotency_keys')
      .where('scope', '=', claim.scope)
      .where('key', '=', claim.key);
    // A 5xx, or a 429 ("try again after Retry-After", nothing done): the key is let go, so the
    // retry it asks for runs rather than getting the refusal back for a day.
    if (reply.statusCode >= 500 || reply.statusCode === 429) {
      await ctx.db
        .deleteFrom('idempotency_keys')
        .where('scope', '=', claim.scope)
        .where('key', '=', claim.key)
        .execute();
    } else {
      const body =
        typeof payload === 'string'
          ? payload
          : payload === null || payload === undefined
            ? ''
            : String(payload);
      // Sealed: a first answer may carry a secret shown once (an API token, a session, a signing secret).
      await where.set({ response_status: reply.statusCode, response_body: ctx.secrets.seal(body) }).execute();
    }
    return payload;
  });
}

/** Forgets keys past the window; run by the periodic cleaner. */
export async function purgeIdempotencyKeys(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', new Date(ctx.clock.now().getTime() - IDEMPOTENCY_TTL_MS))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
