import type { Kysely } from 'kysely';
import { runStatements } from './sql.ts';

/**
 * The fan-out as a function of the database, as the claim and the record became in migration 0015
 * (decision 0018). Sent as a statement, its INSERT ... SELECT was parsed and planned again for every
 * event: on PGlite 1.1 ms of the 1.7 ms it took (docs/performance.md). In PL/pgSQL its plan is kept
 * per connection; the statement is the one `fanOut` sent. Left to choose, PL/pgSQL kept planning it
 * for each call's values (1.2 ms on PGlite); a plan made without the values is the right one (the
 * endpoints of each event's tenant, by index), so the function always uses that one: 0.65 ms.
 */
export const FAN_OUT = `CREATE FUNCTION webhook_fan_out(p_event_ids text[], p_types text[], p_tenants text[],
  p_livemodes boolean[], p_accounts text[], p_now timestamptz)
RETURNS int LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
  inserted int;
BEGIN
  INSERT INTO webhook_deliveries
    (id, endpoint_id, event_id, event_type, payload, status, attempt_count, next_attempt_at, created_at, updated_at)
  SELECT
    -- dlv_ + 22 characters of [0-9A-Za-z] drawn from 256 random bits.
    'dlv_' || substr(translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', ''), 1, 22),
    -- No payload: the delivery reads its event's (migration 0016).
    e.id, ev.id, ev.type, NULL, 'pending', 0, p_now, p_now, p_now
  FROM unnest(p_event_ids, p_types, p_tenants, p_livemodes, p_accounts)
    AS ev(id, type, tenant_id, livemode, customer_account_id)
  JOIN webhook_endpoints e
    ON e.tenant_id = ev.tenant_id
    AND e.livemode = ev.livemode
    AND e.enabled
    AND e.event_types @> jsonb_build_array(ev.type)
    AND (e.customer_account_id IS NULL OR e.customer_account_id = ev.customer_account_id)
  WHERE e.installation_id IS NULL OR NOT EXISTS (
    SELECT 1 FROM installations i JOIN apps a ON a.id = i.app_id
    WHERE i.id = e.installation_id AND a.status = 'suspended'
  );
  GET DIAGNOSTICS inserted = ROW_COUNT;
  RETURN inserted;
END
$fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [FAN_OUT]);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    'DROP FUNCTION webhook_fan_out(text[], text[], text[], boolean[], text[], timestamptz)',
  ]);
}
