import { expect } from 'vitest';
import type { Database } from '../../src/db/schema.ts';
import type { ApiResponse } from '../support/api.ts';
import type { TestWaybill } from '../support/harness.ts';

/** An RFC 9457 answer with the status and stable code (CONTRACT.md, Conventions). */
export function expectProblem(response: ApiResponse, status: number, code: string): void {
  expect(response.status, response.text).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(response.body).toMatchObject({
    type: expect.stringContaining(code),
    title: expect.any(String),
    status,
    detail: expect.any(String),
    code,
  });
}

type TenantTable = 'shipments' | 'events' | 'api_tokens' | 'memberships' | 'customer_accounts';

/** How many rows a table holds, or one company's rows of it: to check that nothing changed. */
export async function countRows(
  w: TestWaybill,
  table: TenantTable | keyof Database,
  tenantId?: string,
): Promise<number> {
  let query = w.ctx.db.selectFrom(table as TenantTable).select((eb) => eb.fn.countAll<number>().as('n'));
  if (tenantId) query = query.where('tenant_id', '=', tenantId);
  return Number((await query.executeTakeFirstOrThrow()).n);
}
