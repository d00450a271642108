import { type RawBuilder, type SqlBool, sql } from 'kysely';
import type { Trx } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { cancelQueued } from '../../delivery/lifecycle.ts';
import { AppError } from '../../lib/errors.ts';

/**
 * What an installation may receive, the one rule (issue 22 items 3 and 4; decision 0024). The rule
 * itself is the database's (migration 0033: the view installation_grants and event_type_scope),
 * so the fan-out function and every query here read the same thing:
 *
 * - an installation whose app is suspended receives nothing (`app_suspended`);
 * - one whose approver left the company, or was moved to another merchant account, receives
 *   nothing until a person approves it again (`needs_approval`);
 * - otherwise it receives the types that the scopes in force allow: those it was granted that the
 *   approver's role holds now (as their app token has them). Shipment events and privacy messages
 *   need `shipments:read` (or `shipments:write`); operational events need `webhooks:read` (or
 *   `webhooks:write`).
 *
 * Endpoints of a company or merchant (no installation) are outside the rule.
 */
export type HeldReason = 'app_suspended' | 'needs_approval';

/**
 * SQL condition: an endpoint of `installation` (an expression, null for a company's endpoint) may
 * receive a message of `type` (an expression) now. `tenant` (an expression), the installation's
 * company, when the caller knows it: the grant is then read in that company's shard on Citus,
 * where a read by installation id alone asks every shard (or, correlated, is refused).
 */
export function installationReceives(
  installation: RawBuilder<unknown>,
  type: RawBuilder<unknown>,
  tenant?: RawBuilder<unknown>,
): RawBuilder<boolean> {
  const ofTenant = tenant ? sql`AND g.tenant_id = (${tenant})::text` : sql``;
  // Cast: a bound null alone has no type.
  return sql<boolean>`((${installation})::text IS NULL OR EXISTS (
    SELECT 1 FROM installation_grants g
    WHERE g.installation_id = (${installation})::text ${ofTenant} AND g.held_reason IS NULL
      AND scopes_allow(g.scopes, event_type_scope((${type})::text))))`;
}

/** How an installation's endpoint stands under the rule: shown on the endpoint (API and dashboard). */
export interface EndpointGrantState {
  held_reason: HeldReason | null;
  /** Types the endpoint subscribes to that the installation's scopes in force do not allow. */
  withheld_event_types: string[];
}

export const NOT_HELD: EndpointGrantState = { held_reason: null, withheld_event_types: [] };

/** The state of each of these endpoints that belongs to an installation (others are not in the map). */
export async function endpointGrantStates(
  db: Db | Trx,
  endpointIds: readonly string[],
): Promise<Map<string, EndpointGrantState>> {
  if (endpointIds.length === 0) return new Map();
  const result = await sql<{ id: string; held_reason: HeldReason | null; withheld: string[] | null }>`
    SELECT e.id, g.held_reason, ARRAY(
      SELECT t FROM jsonb_array_elements_text(e.event_types) AS t
      WHERE NOT scopes_allow(g.scopes, event_type_scope(t))
    ) AS withheld
    FROM webhook_endpoints e
    JOIN installation_grants g ON g.installation_id = e.installation_id AND g.tenant_id = e.tenant_id
    WHERE e.id = ANY (${[...endpointIds]}::text[])
  `.execute(db);
  return new Map(
    result.rows.map((row) => [
      row.id,
      { held_reason: row.held_reason, withheld_event_types: row.withheld ?? [] },
    ]),
  );
}

/**
 * Refuses to send to an endpoint of an installation that may not receive these types now (replays
 * and test messages): 409 `app.suspended`, `installation.needs_approval` or
 * `installation.scope_not_granted`. Nothing changes before the refusal. `tenantId`, the
 * installation's company when known: on Citus, the grant is read in its shard only.
 */
export async function assertInstallationReceives(
  db: Db | Trx,
  installationId: string | null,
  types: readonly string[],
  tenantId?: string,
): Promise<void> {
  if (installationId === null) return;
  const ofTenant = tenantId === undefined ? sql`` : sql`AND g.tenant_id = ${tenantId}`;
  const result = await sql<{ held_reason: HeldReason | null; withheld: string[] | null }>`
    SELECT g.held_reason, ARRAY(
      SELECT t FROM unnest(${[...types]}::text[]) AS t WHERE NOT scopes_allow(g.scopes, event_type_scope(t))
    ) AS withheld
    FROM installation_grants g WHERE g.installation_id = ${installationId} ${ofTenant}
  `.execute(db);
  const row = result.rows[0];
  // The installation is gone: its endpoints went with it (ON DELETE CASCADE).
  if (!row) throw new AppError('webhook_endpoint.not_found');
  if (row.held_reason === 'app_suspended') {
    throw new AppError(
      'app.suspended',
      "This endpoint belongs to a suspended app's installation: it receives nothing, replays and test messages included",
    );
  }
  if (row.held_reason === 'needs_approval') {
    throw new AppError(
      'installation.needs_approval',
      "The person who approved this endpoint's app left the company or lost the role: a person must approve the app again",
    );
  }
  const withheld = row.withheld ?? [];
  if (withheld.length > 0) {
    throw new AppError(
      'installation.scope_not_granted',
      `The app's grant does not allow ${withheld.join(', ')} now`,
      { event_types: withheld },
    );
  }
}

/**
 * Cancels what waits (a retry, or a message not yet sent) for the company's installation endpoints
 * that may no longer receive it: called in the transaction that narrows a grant (a new approval)
 * or ends it (the approver leaves the company). Cancelled, not held: a company replays them once a
 * person approved the app again (bulk replay takes cancelled deliveries). A suspension holds
 * instead, and its reinstatement sends what was held (apps/moderation.ts).
 */
export async function cancelWithheldDeliveries(trx: Trx, tenantId: string, now: Date): Promise<number> {
  return cancelQueued(
    trx,
    sql<SqlBool>`d.tenant_id = ${tenantId} AND d.endpoint_id IN (
      SELECT e.id FROM webhook_endpoints e
      JOIN installation_grants g ON g.installation_id = e.installation_id AND g.tenant_id = e.tenant_id
      WHERE e.tenant_id = ${tenantId} AND e.kind <> 'subscription' AND g.held_reason IS DISTINCT FROM 'app_suspended')
    AND NOT ${installationReceives(
      sql`(SELECT e.installation_id FROM webhook_endpoints e WHERE e.id = d.endpoint_id AND e.tenant_id = ${tenantId})`,
      sql.ref('d.event_type'),
      sql`${tenantId}`,
    )}`,
    now,
  );
}
