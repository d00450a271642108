import { type RawBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { addMs } from '../../lib/clock.ts';
import { hashSecret, newId, newSecret } from '../../lib/ids.ts';
import type { Scope } from '../accounts/roles.ts';
import { ACCESS_TOKEN_LIFETIME_MS, REFRESH_TOKEN_LIFETIME_MS } from './lifetimes.ts';

/** The token response of spec section 2.3, exactly. */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
  scope: string;
  installation_id: string;
  tenant_id: string;
  customer_account_id: string | null;
}

interface IssuedRow {
  installation_id: string;
  scopes: unknown;
  tenant_id: string;
  customer_account_id: string | null;
}

export function parseScopes(value: unknown): Scope[] {
  return (typeof value === 'string' ? JSON.parse(value) : value) as Scope[];
}

/**
 * Spends one grant (a code or a refresh token) and issues a fresh access and refresh token for it, in
 * ONE statement: the UPDATE is a compare-and-swap on `used_at IS NULL`, so of two requests racing
 * with the same grant exactly one gets a row back (RFC 9700 section 4.14.2), and the new tokens exist
 * only if the spend happened. `spend` is an `UPDATE ... RETURNING app_id, installation_id, user_id, scopes`.
 * The grant is spent only while the approver still belongs to the company (spec 3.4).
 */
export async function spendAndIssue(
  ctx: AppContext,
  spend: RawBuilder<unknown>,
): Promise<TokenResponse | null> {
  const now = ctx.clock.now();
  const access = newSecret('atk_live_');
  const refresh = newSecret('atr_');
  const accessExpires = addMs(now, ACCESS_TOKEN_LIFETIME_MS);
  const refreshExpires = addMs(now, REFRESH_TOKEN_LIFETIME_MS);
  const statement = sql<IssuedRow>`
    WITH spent AS (${spend}),
    issued AS (
      INSERT INTO oauth_tokens (id, token_hash, kind, app_id, installation_id, user_id, scopes, created_at, expires_at)
      SELECT t.id, t.token_hash, t.kind, s.app_id, s.installation_id, s.user_id, s.scopes, ${now}, t.expires_at
      FROM spent s CROSS JOIN (VALUES
        (${newId('grt')}, ${hashSecret(access)}, 'access', ${accessExpires}::timestamptz),
        (${newId('grt')}, ${hashSecret(refresh)}, 'refresh', ${refreshExpires}::timestamptz)
      ) AS t (id, token_hash, kind, expires_at)
      RETURNING 1
    )
    SELECT s.installation_id, s.scopes, i.tenant_id, i.customer_account_id
    FROM spent s JOIN installations i ON i.id = s.installation_id`;
  // The text is the same for every call of a grant type: prepared once per connection.
  const [row] = await ctx.database.prepared<IssuedRow>(statement.compile(ctx.db));
  if (!row) return null;
  return {
    access_token: access,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_LIFETIME_MS / 1000,
    refresh_token: refresh,
    scope: parseScopes(row.scopes).join(' '),
    installation_id: row.installation_id,
    tenant_id: row.tenant_id,
    customer_account_id: row.customer_account_id,
  };
}

/**
 * `AND` clause: the person behind the grant is still the installation's approver (a new approval by
 * someone else ends the grants of the one before) and still a member of its company.
 */
export function approverStillMember(table: 'oauth_codes' | 'oauth_tokens'): RawBuilder<unknown> {
  return sql`EXISTS (
    SELECT 1 FROM installations i JOIN memberships m ON m.tenant_id = i.tenant_id AND m.user_id = i.user_id
    WHERE i.id = ${sql.ref(`${table}.installation_id`)} AND i.user_id = ${sql.ref(`${table}.user_id`)})`;
}

export type ReuseKind = 'authorization_code' | 'refresh_token';

/**
 * Ends every token of an installation because a spent code or refresh token came back (spec 3.4,
 * RFC 9700 section 4.14.2): one of the two holders is a thief, and we cannot tell which. Each such
 * revocation is its own audit event.
 */
export async function revokeForReuse(
  ctx: AppContext,
  installationId: string,
  appId: string,
  reused: ReuseKind,
): Promise<void> {
  const now = ctx.clock.now();
  await ctx.db.transaction().execute(async (trx) => {
    const revoked = await trx
      .updateTable('oauth_tokens')
      .set({ revoked_at: now })
      .where('installation_id', '=', installationId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    const installation = await trx
      .selectFrom('installations')
      .select('tenant_id')
      .where('id', '=', installationId)
      .executeTakeFirst();
    await trx
      .insertInto('audit_events')
      .values({
        id: newId('aud'),
        tenant_id: installation?.tenant_id ?? null,
        actor: appId,
        action: `oauth.${reused}_reused`,
        details: JSON.stringify({
          installation_id: installationId,
          app_id: appId,
          revoked_tokens: Number(revoked.numUpdatedRows),
        }),
        created_at: now,
      })
      .execute();
  });
  ctx.log.warn(
    { installationId, appId, reused },
    'OAuth grant reused: every token of the installation revoked',
  );
}

/** Ends every token of an installation (revoking a refresh token, RFC 7009 section 2.1). */
export async function revokeInstallationTokens(ctx: AppContext, installationId: string): Promise<void> {
  await ctx.db
    .updateTable('oauth_tokens')
    .set({ revoked_at: ctx.clock.now() })
    .where('installation_id', '=', installationId)
    .where('revoked_at', 'is', null)
    .execute();
}
