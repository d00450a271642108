import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import { DAY, HOUR } from '../../lib/clock.ts';
import type { DemoSeed } from '../../lib/demo.ts';

import { createCompany } from '../accounts/companies.ts';
import { signUp } from '../accounts/users.ts';
import { uninstallReason } from '../apps/installations.ts';
import { uninstall, upsertInstallation } from '../apps/registry.ts';

const HISTORY_DAYS = 14;
const COMPANIES = [
  { name: 'Northwind Parcels', daysAgo: 12 },
  { name: 'Harbor Goods', daysAgo: 9, uninstalledDaysAgo: 3 },
  { name: 'Lakeside Retail', daysAgo: 5 },
];

/**
 * A living console for the demo developer's app: three companies installed it over two weeks (one
 * uninstalled, with a reason), and two weeks of API calls, some refused, and token grants. The
 * companies belong to a person of their own, so the demo owner's dashboard stays as it was.
 */
export async function seedDemoConsole(ctx: AppContext, _seed: DemoSeed, people: Record<string, string>) {
  const developerId = people.developer;
  if (!developerId) return;
  const app = await ctx.db
    .selectFrom('apps')
    .select('id')
    .where('developer_id', '=', developerId)
    .orderBy('created_at')
    .executeTakeFirst();
  if (!app) return;
  const now = ctx.clock.now().getTime();
  const keeper = await signUp(ctx, {
    email: 'operations@northwind.demo.waybill.test',
    name: 'Nora Northwind',
    password: randomBytes(24).toString('base64url'),
  });
  for (const company of COMPANIES) {
    const tenant = await createCompany(ctx, keeper.id, { name: company.name });
    const installation = await ctx.db.transaction().execute((trx) =>
      upsertInstallation(ctx, trx, {
        appId: app.id,
        tenantId: tenant.id,
        customerAccountId: null,
        userId: keeper.id,
        scopes: ['shipments:read', 'webhooks:write'],
      }),
    );
    if (company.uninstalledDaysAgo !== undefined) {
      await uninstall(ctx, tenant.id, installation.id, {
        reason: uninstallReason('missing_features', 'We needed label printing for returns'),
      });
    }
    await ctx.db
      .updateTable('installation_records')
      .set({
        installed_at: new Date(now - company.daysAgo * DAY),
        ...(company.uninstalledDaysAgo !== undefined
          ? { uninstalled_at: new Date(now - company.uninstalledDaysAgo * DAY) }
          : {}),
      })
      .where('id', '=', installation.id)
      .execute();
  }

  // Two weeks of calls, one batch a day at noon-ish: mostly fine, a few refused for a missing scope.
  const rows: Array<[string, string, string, number]> = [];
  for (let d = 0; d < HISTORY_DAYS; d++) {
    const hour = new Date(Math.floor((now - d * DAY) / HOUR) * HOUR).toISOString();
    const errors = d % 4 === 1 ? 6 : d % 3;
    rows.push([hour, 'api', '2xx', 30 + ((d * 7) % 25)], [hour, 'api', '4xx', errors]);
    if (errors > 0) rows.push([hour, 'api_error', 'auth.insufficient_scope', errors]);
    rows.push([hour, 'token', 'refreshed', 8]);
    if (d % 5 === 0) rows.push([hour, 'token', 'issued', 1]);
    if (d === 2) rows.push([hour, 'token', 'invalid_grant', 2]);
  }
  await sql`
    INSERT INTO app_usage (app_id, hour, metric, detail, count)
    SELECT ${app.id}, u.hour, u.metric, u.detail, u.n
    FROM unnest(${rows.map((r) => r[0])}::timestamptz[], ${rows.map((r) => r[1])}::text[],
                ${rows.map((r) => r[2])}::text[], ${rows.map((r) => r[3])}::bigint[]) AS u(hour, metric, detail, n)
    WHERE u.n > 0
    ON CONFLICT (app_id, hour, metric, detail) DO UPDATE SET count = app_usage.count + excluded.count`.execute(
    ctx.db,
  );
}
