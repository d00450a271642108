import type { Kysely } from 'kysely';
import { setSearchPath } from './0040_function_search_path.ts';
import { runStatements } from './sql.ts';

/**
 * One grant per resource (issue 39 item 3, decision 0063). An installation row is the grant of one
 * app, on one company or merchant account, for ONE resource: `v1` (the REST API: an app's
 * installation) or `mcp` (the MCP server: an agent connection). Its mode, scopes, approver and
 * approval time are that resource's alone, so approving a store app for `/mcp` in test mode no
 * longer flips the mode of its `/v1` installation nor revokes the tokens of it.
 *
 * What was there: an agent client's installation (no developer), and one that an `/mcp` approval
 * left in test mode, are `/mcp` grants; every other one is `/v1`. The tokens and codes a row holds
 * for the other resource end here (an `/mcp` connection of a store app approves again, and gets a
 * row of its own). Subscription targets are the `/v1` installation's, sandbox only in test mode:
 * those of `/mcp` rows, and live ones of test rows, are disabled and what waits for them cancelled.
 * The store counts `/v1` installations only.
 */
const RESOURCE = `ALTER TABLE installations ADD COLUMN resource text NOT NULL DEFAULT 'v1'
  CHECK (resource IN ('v1', 'mcp'))`;
const MCP_ROWS = `UPDATE installations SET resource = 'mcp'
  WHERE NOT livemode OR app_id IN (SELECT id FROM apps WHERE developer_id IS NULL)`;
const FOREIGN_TOKENS = `UPDATE oauth_tokens t SET revoked_at = now() FROM installations i
  WHERE i.id = t.installation_id AND t.resource <> i.resource AND t.revoked_at IS NULL`;
const FOREIGN_CODES = `DELETE FROM oauth_codes c USING installations i
  WHERE i.id = c.installation_id AND c.resource <> i.resource`;
const KEY = `CREATE UNIQUE INDEX installations_account
  ON installations (app_id, tenant_id, customer_account_id, resource) NULLS NOT DISTINCT`;
const KEY_BEFORE = `CREATE UNIQUE INDEX installations_account
  ON installations (app_id, tenant_id, customer_account_id) NULLS NOT DISTINCT`;

/** Subscription targets an installation may not have: an `/mcp` grant's, a test grant's live ones. */
const OUT_OF_MODE = `e.kind = 'subscription' AND i.id = e.installation_id
  AND (i.resource = 'mcp' OR (NOT i.livemode AND e.livemode))`;
const CANCEL_OUT_OF_MODE = `UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
  WHERE status = 'pending' AND id IN (
    SELECT q.delivery_id FROM webhook_queue q JOIN webhook_endpoints e ON e.id = q.endpoint_id,
      installations i WHERE ${OUT_OF_MODE})`;
const DISABLE_OUT_OF_MODE = `UPDATE webhook_endpoints e SET enabled = false, disabled_reason = 'manual', updated_at = now()
  FROM installations i WHERE ${OUT_OF_MODE} AND e.enabled`;

const storeCount = (counted: string) => `CREATE OR REPLACE FUNCTION store_count_installations()
  RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    IF TG_OP = 'INSERT' THEN
      IF ${counted.replaceAll('ROW', 'NEW')} THEN
        INSERT INTO app_store_stats (app_id, install_count) VALUES (NEW.app_id, 1)
          ON CONFLICT (app_id) DO UPDATE SET install_count = app_store_stats.install_count + 1;
      END IF;
      RETURN NEW;
    END IF;
    IF ${counted.replaceAll('ROW', 'OLD')} THEN
      UPDATE app_store_stats SET install_count = greatest(install_count - 1, 0) WHERE app_id = OLD.app_id;
    END IF;
    RETURN OLD;
  END $$`;
const recount = (counted: string) => `UPDATE app_store_stats s SET install_count = (
  SELECT count(*) FROM installations i WHERE i.app_id = s.app_id AND ${counted.replaceAll('ROW', 'i')})`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    RESOURCE,
    MCP_ROWS,
    FOREIGN_TOKENS,
    FOREIGN_CODES,
    'DROP INDEX installations_account',
    KEY,
    CANCEL_OUT_OF_MODE,
    DISABLE_OUT_OF_MODE,
    storeCount(`ROW.resource = 'v1'`),
    recount(`ROW.resource = 'v1'`),
  ]);
  await setSearchPath(db, true);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await runStatements(db, [
    storeCount('true'),
    recount('true'),
    // Two grants of one account become one again: the /mcp row goes.
    `DELETE FROM installations m USING installations v WHERE m.resource = 'mcp' AND v.resource = 'v1'
      AND v.app_id = m.app_id AND v.tenant_id = m.tenant_id
      AND v.customer_account_id IS NOT DISTINCT FROM m.customer_account_id`,
    'DROP INDEX installations_account',
    KEY_BEFORE,
    'ALTER TABLE installations DROP COLUMN resource',
  ]);
  await setSearchPath(db, true);
}
