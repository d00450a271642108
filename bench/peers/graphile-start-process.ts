#!/usr/bin/env node
// graphile-worker started as a process of its own with jobs waiting, for bench/start.ts: the same
// settings and the same job as bench/peers/graphile-side.ts (a signed POST to the receiver), run
// through its library API as a deployment's worker script runs it. SIGTERM stops it.
import type { QueuedMessage } from '../message.ts';
import { makePoster } from './deliver.ts';
import { type GraphileWorkerModule, importPeer, type PeerPgModule, type PgPool } from './install.ts';

const [url, schema, receiverUrl, concurrencyText, localQueueText] = process.argv.slice(2);
const concurrency = Number(concurrencyText);
const worker = await importPeer<GraphileWorkerModule>('graphile-worker');
const { default: peerPg } = await importPeer<PeerPgModule>('pg');
const poster = makePoster(receiverUrl as string, concurrency);
const pool: PgPool = new peerPg.Pool({ connectionString: url, max: Math.max(10, concurrency + 2) });
pool.on('error', () => {});
pool.on('connect', (client) => client.on('error', () => {}));
const logger = new worker.Logger(() => (level, message) => {
  if (level === 'error') console.error(`graphile-worker: ${message}`);
});
const runner = await worker.run({
  pgPool: pool,
  logger,
  noHandleSignals: true,
  preset: {
    worker: {
      schema,
      concurrentJobs: concurrency,
      maxPoolSize: Math.max(10, concurrency + 2),
      localQueue: { size: Number(localQueueText) },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
      pollInterval: 2000,
    },
  },
  taskList: {
    deliver: async (payload: unknown) => {
      const message = payload as QueuedMessage;
      await poster.post(message.id, message.body);
    },
  },
});
process.once('SIGTERM', async () => {
  await runner.stop();
  await poster.close();
  await pool.end();
  process.exit(0);
});
