import { dropTestSchemas } from './harness.ts';

/**
 * Global setup of the Citus project (WAYBILL_TEST_CITUS_URL, a coordinator): a clean database
 * before the run, and after it. Dropping a schema on the coordinator drops its shards on the workers.
 */
export async function setup(): Promise<() => Promise<void>> {
  const url = process.env.WAYBILL_TEST_CITUS_URL as string;
  await dropTestSchemas(url);
  return () => dropTestSchemas(url);
}
