import { CompiledQuery, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashSecret, newId } from '../../src/lib/ids.ts';
import { type GroupedSpend, groupedSpendStatement } from '../../src/modules/oauth/tokens.ts';
import { createCompany } from '../support/api.ts';
import { engine, onCitus, startWaybill, type TestWaybill } from '../support/harness.ts';
import { discover, obtainTokens, registerApp } from './support.ts';

interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function* nodesOf(node: PlanNode): Generator<PlanNode> {
  yield node;
  for (const child of node.Plans ?? []) yield* nodesOf(child);
}

/**
 * The token endpoint's grouped statement finds each grant by its hash whatever the planner knows:
 * on a table no ANALYZE has read yet, a group of refreshes must not start from the installation
 * and read every token it ever had. One PostgreSQL's plan: on Citus, EXPLAIN shows Citus's own plan
 * (a custom scan over the nodes), and the statement there reads the installations first
 * (grantInstallations).
 */
describe.skipIf(onCitus)('the grouped grant statement', () => {
  let w: TestWaybill;
  beforeAll(async () => {
    w = await startWaybill();
  });
  afterAll(async () => {
    await w?.close();
  });

  it("looks each refresh token up by its hash, not through its installation's other tokens", async () => {
    const company = await createCompany(w);
    const app = await registerApp(w);
    const tokens = await obtainTokens(w, await discover(w), app, company.owner);
    const grant = await w.ctx.db
      .selectFrom('oauth_tokens')
      .select(['installation_id', 'tenant_id', 'user_id'])
      .where('token_hash', '=', hashSecret(tokens.refresh_token as string))
      .executeTakeFirstOrThrow();
    // No statistics for the planner: PostgreSQL's autovacuum must not analyze meanwhile (PGlite has none).
    if (engine === 'postgres')
      await sql`ALTER TABLE oauth_tokens SET (autovacuum_enabled = false)`.execute(w.ctx.db);
    // A month of hourly refreshes for this installation, each leaving its spent token and an access token.
    const now = w.clock.now();
    await sql`INSERT INTO oauth_tokens (id, token_hash, kind, app_id, installation_id, tenant_id, user_id, scopes,
        created_at, expires_at, used_at)
      SELECT 'grt_old' || g, 'old' || g, CASE WHEN g % 2 = 0 THEN 'refresh' ELSE 'access' END, ${app.clientId},
        ${grant.installation_id}, ${grant.tenant_id}, ${grant.user_id}, '["shipments:read"]', ${now}, ${now}, ${now}
      FROM generate_series(1, 20000) AS g`.execute(w.ctx.db);

    const spends: GroupedSpend[] = Array.from({ length: 20 }, (_, i) => ({
      grantHash: hashSecret(`atr_${i}`),
      presented: { clientId: app.clientId, secret: app.clientSecret },
      reissueSealed: null,
      accessId: newId('grt'),
      accessHash: hashSecret(`atk_live_${i}`),
      accessTestHash: hashSecret(`atk_test_${i}`),
      refreshId: newId('grt'),
      refreshHash: hashSecret(`atr_next_${i}`),
    }));
    const statement = groupedSpendStatement(w.ctx, 'refresh_token', spends);
    const { rows } = await w.ctx.db.executeQuery<{ 'QUERY PLAN': unknown }>(
      CompiledQuery.raw(`EXPLAIN (FORMAT JSON) ${statement.sql}`, [...statement.parameters]),
    );
    const explained = rows[0]?.['QUERY PLAN'];
    const [{ Plan: plan }] = (typeof explained === 'string' ? JSON.parse(explained) : explained) as [
      { Plan: PlanNode },
    ];
    const tokenScans = [...nodesOf(plan)].filter(
      (node) => node['Relation Name'] === 'oauth_tokens' && node['Node Type'] !== 'ModifyTable',
    );
    expect(tokenScans.map((node) => node['Index Name'])).toEqual(['oauth_tokens_token_hash_key']);
  });
});
