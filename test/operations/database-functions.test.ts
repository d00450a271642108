import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

/** Every function of Waybill's schema with its settings (`proconfig`), by name. */
async function functionSettings() {
  const { rows } = await sql<{ name: string; schema: string; config: string[] | null }>`
    SELECT p.proname AS name, n.nspname AS schema, p.proconfig AS config
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
    WHERE n.nspname = current_schema() AND p.prokind = 'f'
    ORDER BY p.proname`.execute(w.ctx.db);
  return rows;
}

describe('database functions', () => {
  it("each runs with a fixed search_path: Waybill's schema, then pg_temp last", async () => {
    const rows = await functionSettings();
    // The claim, record, fan-out and trigger functions at least.
    expect(rows.length).toBeGreaterThanOrEqual(5);
    const unset = rows.filter(({ schema, config }) => {
      const setting = (config ?? []).find((entry) => entry.startsWith('search_path='));
      return setting?.replaceAll('"', '') !== `search_path=${schema}, pg_temp`;
    });
    expect(unset.map((row) => `${row.name} ${JSON.stringify(row.config)}`)).toEqual([]);
  });

  it('the fan-out and the claim on one PostgreSQL keep one generic plan; their Citus twins plan each call', async () => {
    const planned = ['webhook_claim', 'webhook_fan_out', 'webhook_fan_out_endpoints'].flatMap((name) => [
      name,
      `${name}_tenant`,
    ]);
    const rows = (await functionSettings()).filter(({ name }) => planned.includes(name));
    const generic = rows.map(({ name, config }) => [
      name,
      (config ?? []).includes('plan_cache_mode=force_generic_plan'),
    ]);
    expect(generic).toEqual([
      ['webhook_claim', true],
      ['webhook_claim_tenant', false],
      ['webhook_fan_out', true],
      ['webhook_fan_out_endpoints', true],
      ['webhook_fan_out_endpoints_tenant', false],
      ['webhook_fan_out_tenant', false],
    ]);
  });
});
