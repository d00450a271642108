import { dropTestSchemas } from './harness.ts';

/** Global setup of the PostgreSQL project: a clean database before the run, and after it. */
export async function setup(): Promise<() => Promise<void>> {
  const url = process.env.WAYBILL_TEST_DATABASE_URL as string;
  await dropTestSchemas(url);
  return () => dropTestSchemas(url);
}
