import { type CompiledQuery, type RawBuilder, sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { isDatabaseUnavailable } from '../../db/database.ts';
import { addMs } from '../../lib/clock.ts';
import { CallGroups } from '../../lib/group.ts';
import { hashSecret, newId, newSecret } from '../../lib/ids.ts';
import type { Scope } from '../accounts/roles.ts';
import type { Presented } from './client-auth.ts';
import { ACCESS_TOKEN_LIFETIME_MS, REFRESH_RACE_WINDOW_MS, REFRESH_TOKEN_LIFETIME_MS } from './lifetimes.ts';
import type { Resource } from './resource.ts';

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
  /** The installation's mode: a test agent connection's access tokens are atk_test_. */
  livemode: boolean;
  tenant_id: string;
  customer_account_id: string | null;
}

export function parseScopes(value: unknown): Scope[] {
  return (typeof value === 'string' ? JSON.parse(value) : value) as Scope[];
}

/** The same random part under the test prefix: both hashes go to the statement, which keeps the mode's. */
function testVariant(access: string): string {
  return `atk_test_${access.slice('atk_live_'.length)}`;
}

/** The secrets of one token response; only their hashes are stored. */
export interface TokenPair {
  /** Under the live prefix: the statement stores the mode's spelling (testVariant). */
  access: string;
  refresh: string;
}

export function newTokenPair(): TokenPair {
  return { access: newSecret('atk_live_'), refresh: newSecret('atr_') };
}

/**
 * The pair an agent client's refresh mints, sealed with the secret key box, to be kept beside the
 * spent refresh token for the grace (CONTRACT.md, Agents; decision 0064): a second presentation
 * within it answers these very tokens.
 */
export function sealPair(ctx: AppContext, pair: TokenPair, now: Date): string {
  return ctx.secrets.seal(
    JSON.stringify({ ...pair, expires_at: addMs(now, ACCESS_TOKEN_LIFETIME_MS).toISOString() }),
  );
}

/**
 * The installations a spend reads (the approver's standing, the mode, the answer's columns): the
 * table itself on one PostgreSQL. On Citus, where an UPDATE of a reference table (`oauth_codes`,
 * `oauth_tokens`) may read no distributed table, their rows are read first, by their companies
 * (one shard each), and the statement reads them as values: same columns, same rules.
 */
export async function grantInstallations(
  ctx: AppContext,
  table: 'oauth_codes' | 'oauth_tokens',
  grantHashes: readonly string[],
): Promise<RawBuilder<unknown>> {
  if (!ctx.database.distributed) return sql`installations`;
  const hash = table === 'oauth_codes' ? sql.ref('code_hash') : sql.ref('token_hash');
  const { rows: grants } = await sql<{ installation_id: string; tenant_id: string }>`
    SELECT DISTINCT installation_id, tenant_id FROM ${sql.table(table)}
    WHERE ${hash} = ANY (${[...grantHashes]}::text[])`.execute(ctx.db);
  const { rows } =
    grants.length === 0
      ? { rows: [] }
      : await sql<{
          id: string;
          tenant_id: string;
          user_id: string;
          livemode: boolean;
          customer_account_id: string | null;
        }>`
    SELECT id, tenant_id, user_id, livemode, customer_account_id FROM installations
    WHERE tenant_id = ANY (${[...new Set(grants.map((g) => g.tenant_id))]}::text[])
      AND id = ANY (${grants.map((g) => g.installation_id)}::text[])`.execute(ctx.db);
  return sql`(SELECT * FROM unnest(${rows.map((r) => r.id)}::text[], ${rows.map((r) => r.tenant_id)}::text[],
    ${rows.map((r) => r.user_id)}::text[], ${rows.map((r) => r.livemode)}::boolean[],
    ${rows.map((r) => r.customer_account_id)}::text[]) AS gi(id, tenant_id, user_id, livemode, customer_account_id))`;
}

/**
 * Spends one grant (a code or a refresh token) and issues a fresh access and refresh token for it, in
 * ONE statement: the UPDATE is a compare-and-swap on `used_at IS NULL`, so of two requests racing
 * with the same grant exactly one gets a row back (RFC 9700 section 4.14.2), and the new tokens exist
 * only if the spend happened. `spend` is an `UPDATE ... RETURNING app_id, installation_id, tenant_id,
 * user_id, scopes`.
 * The grant is spent only while the approver still belongs to the company (spec 3.4). The new
 * tokens keep the grant's resource (RFC 8707), returned by `spend` as `resource`. `installations`:
 * what `spend` was built with (grantInstallations).
 */
export async function spendAndIssue(
  ctx: AppContext,
  spend: RawBuilder<unknown>,
  pair: TokenPair = newTokenPair(),
  installations: RawBuilder<unknown> = sql`installations`,
): Promise<TokenResponse | null> {
  const now = ctx.clock.now();
  const { access, refresh } = pair;
  const statement = sql<IssuedRow>`
    WITH spent AS (${spend}),
    ${issueForSpent(
      now,
      {
        accessId: sql`${newId('grt')}`,
        accessHash: sql`${hashSecret(access)}`,
        accessTestHash: sql`${hashSecret(testVariant(access))}`,
        refreshId: sql`${newId('grt')}`,
        refreshHash: sql`${hashSecret(refresh)}`,
      },
      installations,
    )}`;
  // The text is the same for every call of a grant type: prepared once per connection.
  const [row] = await ctx.database.prepared<IssuedRow>(statement.compile(ctx.db));
  return row ? responseOf(row, access, refresh) : null;
}

/**
 * The tail both spends share: for each grant `spent` returned, its new access and refresh token
 * (ids and hashes from `pair`, values or `spent` columns), and the row of its answer, with
 * `spent`'s own `extra` columns first; `installations` as grantInstallations gives it.
 */
function issueForSpent(
  now: Date,
  pair: Record<
    'accessId' | 'accessHash' | 'accessTestHash' | 'refreshId' | 'refreshHash',
    RawBuilder<unknown>
  >,
  installations: RawBuilder<unknown>,
  extra: RawBuilder<unknown> = sql``,
): RawBuilder<unknown> {
  return sql`issued AS (
      INSERT INTO oauth_tokens (id, token_hash, kind, app_id, installation_id, tenant_id, user_id, scopes, resource,
        created_at, expires_at)
      SELECT t.id, t.token_hash, t.kind, s.app_id, s.installation_id, s.tenant_id, s.user_id, s.scopes, s.resource,
        ${now}, t.expires_at
      FROM spent s JOIN ${installations} si ON si.id = s.installation_id AND si.tenant_id = s.tenant_id
      CROSS JOIN LATERAL (VALUES
        (${pair.accessId}, CASE WHEN si.livemode THEN ${pair.accessHash} ELSE ${pair.accessTestHash} END, 'access',
          ${addMs(now, ACCESS_TOKEN_LIFETIME_MS)}::timestamptz),
        (${pair.refreshId}, ${pair.refreshHash}, 'refresh', ${addMs(now, REFRESH_TOKEN_LIFETIME_MS)}::timestamptz)
      ) AS t (id, token_hash, kind, expires_at)
      RETURNING 1
    )
    SELECT ${extra} s.installation_id, s.scopes, i.livemode, i.tenant_id, i.customer_account_id
    FROM spent s JOIN ${installations} i ON i.id = s.installation_id AND i.tenant_id = s.tenant_id`;
}

function responseOf(
  row: IssuedRow,
  access: string,
  refresh: string,
  expiresIn = ACCESS_TOKEN_LIFETIME_MS / 1000,
): TokenResponse {
  return {
    access_token: row.livemode ? access : testVariant(access),
    token_type: 'Bearer',
    expires_in: expiresIn,
    refresh_token: refresh,
    scope: parseScopes(row.scopes).join(' '),
    installation_id: row.installation_id,
    tenant_id: row.tenant_id,
    customer_account_id: row.customer_account_id,
  };
}

/** One request's part of a grouped spend (see spendAndIssueGrouped). */
export interface GrantProof {
  /** SHA-256 of the code or of the refresh token. */
  grantHash: string;
  presented: Presented;
  /** authorization_code: the redirect_uri sent, and S256 of the code_verifier. */
  redirectUri?: string;
  challenge?: string;
  /** The resource the request names (RFC 8707), which must be the grant's; undefined: the grant's. */
  resource?: Resource;
}

export interface GroupedSpend extends GrantProof {
  /** A refresh by a public client: the pair sealed, kept if the client is an agent (sealPair). */
  reissueSealed: string | null;
  accessId: string;
  accessHash: string;
  accessTestHash: string;
  refreshId: string;
  refreshHash: string;
}

/**
 * One grouped statement at a time per grant type, a second only beside one stalled for
 * GROUP_STALL_MS (a lock wait); and requests in one (ample for the token endpoint's pool of 10).
 */
const GROUP_LANES = 2;
const GROUP_MAX = 64;
const GROUP_STALL_MS = 25;

const groupsByContext = new WeakMap<
  AppContext,
  Record<ReuseKind, CallGroups<GroupedSpend, IssuedRow | null>>
>();

function groupsOf(ctx: AppContext): Record<ReuseKind, CallGroups<GroupedSpend, IssuedRow | null>> {
  let groups = groupsByContext.get(ctx);
  if (!groups) {
    const options = { lanes: GROUP_LANES, max: GROUP_MAX, stallMs: GROUP_STALL_MS };
    groups = {
      authorization_code: new CallGroups((spends) => spendGroup(ctx, 'authorization_code', spends), options),
      refresh_token: new CallGroups((spends) => spendGroup(ctx, 'refresh_token', spends), options),
    };
    groupsByContext.set(ctx, groups);
  }
  return groups;
}

/**
 * The token endpoint's happy path (spendAndIssue's rules: one compare-and-swap per grant, the new
 * tokens only with the spend), with the requests that arrive together in one statement: one round
 * trip and one commit for all of them, every grant committed before any answer (issue 10: a
 * statement's round trip was a third of the token endpoint's CPU). Of two requests with the same
 * grant in one statement, the row is spent once and only one gets tokens. Null: this request
 * goes the full way, for its precise error.
 */
export async function spendAndIssueGrouped(
  ctx: AppContext,
  kind: ReuseKind,
  proof: GrantProof,
): Promise<TokenResponse | null> {
  const { access, refresh } = newTokenPair();
  // Only an agent's refresh keeps it, and agents are public clients: no sealing for the rest.
  const keep = kind === 'refresh_token' && proof.presented.secret === null;
  const row = await groupsOf(ctx)[kind].call({
    ...proof,
    reissueSealed: keep ? sealPair(ctx, { access, refresh }, ctx.clock.now()) : null,
    accessId: newId('grt'),
    accessHash: hashSecret(access),
    accessTestHash: hashSecret(testVariant(access)),
    refreshId: newId('grt'),
    refreshHash: hashSecret(refresh),
  });
  return row ? responseOf(row, access, refresh) : null;
}

async function spendGroup(
  ctx: AppContext,
  kind: ReuseKind,
  spends: readonly GroupedSpend[],
): Promise<(IssuedRow | null)[]> {
  let rows: (IssuedRow & { n: number })[];
  try {
    // One text per grant type, whatever the group's size: prepared once per connection.
    const installations = await grantInstallations(
      ctx,
      kind === 'refresh_token' ? 'oauth_tokens' : 'oauth_codes',
      spends.map((spend) => spend.grantHash),
    );
    rows = await ctx.database.prepared<IssuedRow & { n: number }>(
      groupedSpendStatement(ctx, kind, spends, installations),
    );
  } catch (err) {
    if (isDatabaseUnavailable(err)) throw err;
    // Whatever one request's input did to the group, each goes the full way on its own.
    ctx.log.warn({ err, kind, requests: spends.length }, 'grouped token statement failed');
    return spends.map(() => null);
  }
  const byPosition = new Map(rows.map((row) => [Number(row.n), row]));
  return spends.map((_, index) => byPosition.get(index + 1) ?? null);
}

/** The statement of spendGroup: each row answers the spend at position `n` (1-based). */
export function groupedSpendStatement(
  ctx: AppContext,
  kind: ReuseKind,
  spends: readonly GroupedSpend[],
  installations: RawBuilder<unknown> = sql`installations`,
): CompiledQuery {
  const now = ctx.clock.now();
  const column = (pick: (spend: GroupedSpend) => string | null) => spends.map(pick);
  const proven = sql`a.id = v.client_id AND a.status <> 'suspended' AND CASE WHEN v.secret_hash IS NULL
    THEN a.kind = 'public' ELSE a.kind = 'confidential' AND a.client_secret_hash = v.secret_hash END`;
  const returning = sql`(v.n)::int AS n, v.access_id, v.access_hash, v.access_test_hash, v.refresh_id,
    v.refresh_hash`;
  const spend =
    kind === 'refresh_token'
      ? sql`UPDATE oauth_tokens SET used_at = ${now},
            reissue_sealed = CASE WHEN a.developer_id IS NULL THEN v.reissue_sealed END
          FROM v, apps a
          WHERE oauth_tokens.token_hash = v.grant_hash AND oauth_tokens.kind = 'refresh'
            AND oauth_tokens.used_at IS NULL AND oauth_tokens.revoked_at IS NULL AND oauth_tokens.expires_at > ${now}
            AND a.id = oauth_tokens.app_id AND ${proven} AND ${approverStillMember('oauth_tokens', installations)}
            AND ${agentRulesHold('oauth_tokens', sql`a.developer_id IS NULL`, installations)}
            AND (v.resource IS NULL OR v.resource = oauth_tokens.resource)
          RETURNING ${returning}, oauth_tokens.app_id, oauth_tokens.installation_id, oauth_tokens.tenant_id,
            oauth_tokens.user_id, oauth_tokens.scopes, oauth_tokens.resource`
      : sql`UPDATE oauth_codes SET used_at = ${now} FROM v, apps a
          WHERE oauth_codes.code_hash = v.grant_hash AND oauth_codes.used_at IS NULL
            AND oauth_codes.expires_at > ${now} AND oauth_codes.redirect_uri = v.redirect_uri
            AND oauth_codes.code_challenge = v.challenge
            AND a.id = oauth_codes.app_id AND ${proven} AND ${approverStillMember('oauth_codes', installations)}
            AND ${agentRulesHold('oauth_codes', sql`a.developer_id IS NULL`, installations)}
            AND (v.resource IS NULL OR v.resource = oauth_codes.resource)
          RETURNING ${returning}, oauth_codes.app_id, oauth_codes.installation_id, oauth_codes.tenant_id,
            oauth_codes.user_id, oauth_codes.scopes, oauth_codes.resource`;
  const statement = sql<IssuedRow & { n: number }>`
    WITH v AS (
      SELECT * FROM unnest(
        ${column((s) => s.grantHash)}::text[], ${column((s) => s.presented.clientId)}::text[],
        ${column((s) => (s.presented.secret === null ? null : hashSecret(s.presented.secret)))}::text[],
        ${column((s) => s.redirectUri ?? null)}::text[], ${column((s) => s.challenge ?? null)}::text[],
        ${column((s) => s.accessId)}::text[], ${column((s) => s.accessHash)}::text[],
        ${column((s) => s.accessTestHash)}::text[], ${column((s) => s.refreshId)}::text[],
        ${column((s) => s.refreshHash)}::text[], ${column((s) => s.resource ?? null)}::text[],
        ${column((s) => s.reissueSealed)}::text[]
      ) WITH ORDINALITY AS v(grant_hash, client_id, secret_hash, redirect_uri, challenge, access_id, access_hash,
        access_test_hash, refresh_id, refresh_hash, resource, reissue_sealed, n)
    ),
    spent AS (${spend}),
    ${issueForSpent(
      now,
      {
        accessId: sql`s.access_id`,
        accessHash: sql`s.access_hash`,
        accessTestHash: sql`s.access_test_hash`,
        refreshId: sql`s.refresh_id`,
        refreshHash: sql`s.refresh_hash`,
      },
      installations,
      sql`s.n,`,
    )}`;
  return statement.compile(ctx.db);
}

/**
 * `AND` clause: the person behind the grant is still the installation's approver (a new approval by
 * someone else ends the grants of the one before) and still a member of its company.
 */
export function approverStillMember(
  table: 'oauth_codes' | 'oauth_tokens',
  installations: RawBuilder<unknown> = sql`installations`,
): RawBuilder<unknown> {
  // `|| ''` keeps the installation's index of tokens out of this check, so each grant is found by
  // its hash. Without statistics (PGlite, which never analyzes this table; PostgreSQL before
  // autovacuum's first ANALYZE) the planner otherwise started a group of 20 from the installation
  // and read every token it ever had: 186 ms instead of 1.6. OFFSET 0 would do it too, but then the
  // statement never keeps a generic plan and is planned again on every call (60 µs a grant).
  return sql`EXISTS (
    SELECT 1 FROM ${installations} i JOIN memberships m ON m.tenant_id = i.tenant_id AND m.user_id = i.user_id
    WHERE i.id = ${sql.ref(`${table}.installation_id`)} || '' AND i.tenant_id = ${sql.ref(`${table}.tenant_id`)}
      AND i.user_id = ${sql.ref(`${table}.user_id`)})`;
}

/**
 * `AND` clause (CONTRACT.md, Agents): an agent client (`agentClient`, an SQL boolean) holds grants
 * for /mcp only, and a grant for /mcp gets tokens only in a mode the company's `agent_access`
 * allows now: test unless it refuses test, live only for a live company that allows live. Nothing
 * is spent otherwise: once the company allows the mode again, the same grant works.
 */
export function agentRulesHold(
  table: 'oauth_codes' | 'oauth_tokens',
  agentClient: RawBuilder<unknown>,
  installations: RawBuilder<unknown> = sql`installations`,
): RawBuilder<unknown> {
  return sql`CASE WHEN ${sql.ref(`${table}.resource`)} = 'v1' THEN NOT (${agentClient})::boolean
    ELSE EXISTS (SELECT 1 FROM ${installations} gi JOIN companies gc ON gc.id = gi.tenant_id
      WHERE gi.id = ${sql.ref(`${table}.installation_id`)} || '' AND gi.tenant_id = ${sql.ref(`${table}.tenant_id`)}
        AND CASE WHEN gi.livemode
        THEN gc.live AND (gc.agent_access ->> 'live')::boolean IS TRUE
        ELSE (gc.agent_access ->> 'test')::boolean IS NOT FALSE END) END`;
}

/**
 * The answer to an agent client presenting again, within the grace, the refresh token it spent:
 * the pair that use minted (CONTRACT.md, Agents; decision 0064), from its sealed copy, as long as
 * the grant stands (nothing revoked since, approver still there, mode still allowed) and the pair
 * itself was not revoked. Null otherwise: the caller revokes.
 */
export async function reissuedPair(
  ctx: AppContext,
  tokenHash: string,
  client: { id: string; developer_id: string | null },
): Promise<TokenResponse | null> {
  if (client.developer_id !== null) return null;
  const now = ctx.clock.now();
  const installations = await grantInstallations(ctx, 'oauth_tokens', [tokenHash]);
  const { rows } = await sql<IssuedRow & { reissue_sealed: string }>`
    SELECT oauth_tokens.installation_id, oauth_tokens.scopes, i.livemode, i.tenant_id,
      i.customer_account_id, oauth_tokens.reissue_sealed
    FROM oauth_tokens JOIN ${installations} i ON i.id = oauth_tokens.installation_id
        AND i.tenant_id = oauth_tokens.tenant_id
      JOIN apps a ON a.id = oauth_tokens.app_id
    WHERE oauth_tokens.token_hash = ${tokenHash} AND oauth_tokens.kind = 'refresh'
      AND oauth_tokens.app_id = ${client.id} AND a.developer_id IS NULL AND a.status <> 'suspended'
      AND oauth_tokens.reissue_sealed IS NOT NULL AND oauth_tokens.revoked_at IS NULL
      AND oauth_tokens.used_at >= ${addMs(now, -REFRESH_RACE_WINDOW_MS)}
      AND ${approverStillMember('oauth_tokens', installations)}
      AND ${agentRulesHold('oauth_tokens', sql`true`, installations)}`.execute(ctx.db);
  const row = rows[0];
  if (!row) return null;
  const pair = JSON.parse(ctx.secrets.open(row.reissue_sealed)) as TokenPair & { expires_at: string };
  const access = row.livemode ? pair.access : testVariant(pair.access);
  const standing = await ctx.db
    .selectFrom('oauth_tokens')
    .select('id')
    .where('token_hash', 'in', [hashSecret(access), hashSecret(pair.refresh)])
    .where('revoked_at', 'is', null)
    .execute();
  if (standing.length !== 2) return null;
  const left = Math.ceil((new Date(pair.expires_at).getTime() - now.getTime()) / 1000);
  return responseOf(row, pair.access, pair.refresh, left);
}

/** Drops the sealed pairs whose grace is over (housekeeping): past it, a reuse revokes. */
export async function dropSpentPairs(ctx: AppContext): Promise<number> {
  const result = await ctx.db
    .updateTable('oauth_tokens')
    .set({ reissue_sealed: null })
    .where('reissue_sealed', 'is not', null)
    .where('used_at', '<', addMs(ctx.clock.now(), -REFRESH_RACE_WINDOW_MS))
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** The two grants that spend something: a code, a refresh token. */
export type ReuseKind = 'authorization_code' | 'refresh_token';

/**
 * Ends every token of an installation because a spent code or refresh token came back (spec 3.4,
 * RFC 9700 section 4.14.2): one of the two holders is a thief, and we cannot tell which. Each such
 * revocation is its own audit event.
 */
export async function revokeForReuse(
  ctx: AppContext,
  grant: { installation_id: string; tenant_id: string },
  appId: string,
  reused: ReuseKind,
): Promise<void> {
  const now = ctx.clock.now();
  const installationId = grant.installation_id;
  await ctx.db.transaction().execute(async (trx) => {
    const revoked = await trx
      .updateTable('oauth_tokens')
      .set({ revoked_at: now, reissue_sealed: null })
      .where('installation_id', '=', installationId)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    await trx
      .insertInto('audit_events')
      .values({
        id: newId('aud'),
        tenant_id: grant.tenant_id,
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
