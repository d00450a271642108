/**
 * graphile-worker 0.18 as a webhook sender, tuned as its performance page runs it: a local queue
 * (jobs fetched and locked in batches), batched job completion, 64 jobs at once. Its own schema,
 * dropped at the end; jobs are queued first with addJobs, then a runner is started and timed.
 */
import type { QueuedMessage } from '../message.ts';
import type { Poster } from './deliver.ts';
import {
  type GraphileWorkerModule,
  type GraphileWorkerUtils,
  importPeer,
  type PeerPgModule,
  type PgPool,
} from './install.ts';
import { withAppName } from './server-cpu.ts';

export const GRAPHILE_APP = 'waybill-bench-graphile-worker';

export interface GraphileSettings {
  concurrency: number;
  localQueueSize: number;
}

/** Called before a side queues its messages: see GraphileSide.drain. */
export interface QueueingHooks {
  reset(): Promise<void>;
  start(): Promise<void>;
}

export interface GraphileSide {
  schema: string;
  settings: GraphileSettings;
  /**
   * Queues `messages` (not timed), then runs a worker until all are done; returns the seconds.
   * `queueing.reset` runs first (the rows meter's start, which ends the side's connections); then
   * the pool opens 10 connections again, as many as Waybill's, so that the CPU meter started by
   * `queueing.start` does not count their start-up.
   */
  drain(
    messages: QueuedMessage[],
    onStarted: () => Promise<void>,
    isDone: () => boolean,
    queueing?: QueueingHooks,
  ): Promise<number>;
  close(): Promise<void>;
}

export async function startGraphileSide(
  url: string,
  schema: string,
  poster: Poster,
  settings: GraphileSettings,
): Promise<GraphileSide> {
  const worker = await importPeer<GraphileWorkerModule>('graphile-worker');
  const { default: peerPg } = await importPeer<PeerPgModule>('pg');
  // One pool for queueing and the runner (opened before the clock starts, as Waybill's is), at
  // the size graphile-worker's docs advise: concurrency + 2 or 10, whichever is larger. With the
  // local queue the jobs themselves hold no connection.
  const pool: PgPool = new peerPg.Pool({
    connectionString: withAppName(url, GRAPHILE_APP),
    max: Math.max(10, settings.concurrency + 2),
  });
  // graphile-worker checks that the pool and its clients have error handlers.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const logger = new worker.Logger(() => (level, message) => {
    if (level === 'error') console.error(`graphile-worker: ${message}`);
  });
  const preset = {
    worker: {
      schema,
      concurrentJobs: settings.concurrency,
      maxPoolSize: Math.max(10, settings.concurrency + 2),
      localQueue: { size: settings.localQueueSize },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
      pollInterval: 2000,
    },
  };
  const utils: GraphileWorkerUtils = await worker.makeWorkerUtils({ pgPool: pool, logger, preset });
  await utils.migrate();

  return {
    schema,
    settings,
    async drain(messages, onStarted, isDone, queueing) {
      await queueing?.reset();
      await Promise.all(Array.from({ length: 10 }, () => pool.query('SELECT 1')));
      await queueing?.start();
      for (let i = 0; i < messages.length; i += 1000) {
        await utils.addJobs(
          messages.slice(i, i + 1000).map((message) => ({ identifier: 'deliver', payload: message })),
        );
      }
      await onStarted();
      const started = performance.now();
      const runner = await worker.run({
        pgPool: pool,
        logger,
        preset,
        noHandleSignals: true,
        taskList: {
          deliver: async (payload: unknown) => {
            const message = payload as QueuedMessage;
            await poster.post(message.id, message.body);
          },
        },
      });
      // Arrivals first (cheap), then the queue empty: a job is done once its row is deleted.
      while (!isDone()) await new Promise((resolve) => setTimeout(resolve, 10));
      for (;;) {
        const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}._private_jobs`);
        if (Number(rows[0]?.n) === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const seconds = (performance.now() - started) / 1000;
      await runner.stop();
      return seconds;
    },
    async close() {
      await utils.release();
      await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await pool.end();
    },
  };
}
