import { defineConfig } from 'vitest/config';

// The suite runs on the embedded PGlite always, and on PostgreSQL as well when
// WAYBILL_TEST_DATABASE_URL is set (CI sets it): the same files, one project per engine.
const postgresUrl = process.env.WAYBILL_TEST_DATABASE_URL;
// And on a Citus cluster when WAYBILL_TEST_CITUS_URL names its coordinator (not in CI): every
// file, its schema distributed after its migrations (decision 0073).
const citusUrl = process.env.WAYBILL_TEST_CITUS_URL;

const NODE_LOSS = 'test/db/citus-node-loss.test.ts';

const citusEnv = (url: string) => ({
  WAYBILL_TEST_ENGINE: 'postgres',
  WAYBILL_TEST_DATABASE_URL: url,
  WAYBILL_TEST_ON_CITUS: '1',
});

const shared = {
  include: ['test/**/*.test.ts'],
  testTimeout: 30_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
  // Every message a receiver in test/ gets is checked against the event catalogue's schemas.
  setupFiles: ['test/support/message-check-setup.ts'],
};

export default defineConfig({
  test: {
    maxWorkers: 2,
    projects: [
      {
        test: {
          ...shared,
          name: 'pglite',
          env: { WAYBILL_TEST_ENGINE: 'pglite' },
          globalSetup: ['test/support/pglite-template.ts'],
        },
      },
      ...(postgresUrl
        ? [
            {
              test: {
                ...shared,
                name: 'postgres',
                env: { WAYBILL_TEST_ENGINE: 'postgres' },
                globalSetup: ['test/support/postgres-schemas.ts'],
              },
            },
          ]
        : []),
      ...(citusUrl
        ? [
            {
              test: {
                ...shared,
                name: 'citus',
                exclude: [NODE_LOSS],
                env: citusEnv(citusUrl),
                globalSetup: ['test/support/citus-schemas.ts'],
              },
            },
            // Stops a worker node: alone, after every other file, which would meet the node away.
            {
              test: {
                ...shared,
                name: 'citus-node-loss',
                include: [NODE_LOSS],
                env: citusEnv(citusUrl),
                sequence: { groupOrder: 1 },
              },
            },
          ]
        : []),
    ],
  },
});
