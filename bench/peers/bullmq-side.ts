/**
 * BullMQ 6 on the machine's Redis as a webhook sender: one queue under a key prefix of the
 * benchmark's own (its keys deleted before and after), a worker at concurrency 64. Completed jobs
 * are removed as they finish, failed ones kept, three attempts: a common production setting.
 */
import type { QueuedMessage } from '../message.ts';
import type { Poster } from './deliver.ts';
import {
  type BullMqModule,
  type BullQueue,
  type IoRedisModule,
  importPeer,
  type RedisClient,
} from './install.ts';

export interface BullSide {
  prefix: string;
  /** redis-server's pid (from INFO), for the CPU meter. */
  pid: number;
  /** appendonly / save, as the server runs: what a "delivery recorded" means on this side. */
  durability: string;
  drain(messages: QueuedMessage[], onStarted: () => Promise<void>): Promise<number>;
  close(): Promise<void>;
}

async function deleteKeys(redis: RedisClient, prefix: string): Promise<number> {
  let cursor = '0';
  let deleted = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.del(...keys);
  } while (cursor !== '0');
  return deleted;
}

export async function startBullSide(
  host: string,
  port: number,
  prefix: string,
  poster: Poster,
  concurrency: number,
): Promise<BullSide> {
  const { Queue, Worker } = await importPeer<BullMqModule>('bullmq');
  const { Redis } = await importPeer<IoRedisModule>('ioredis');
  const redis = new Redis({ host, port, maxRetriesPerRequest: 1, connectTimeout: 2000, lazyConnect: false });
  const info = await redis.info('server');
  const pid = Number(/process_id:(\d+)/.exec(info)?.[1] ?? 0);
  let durability = 'unknown';
  try {
    const [, appendonly] = await redis.config('GET', 'appendonly');
    const [, fsync] = await redis.config('GET', 'appendfsync');
    const [, save] = await redis.config('GET', 'save');
    durability = `appendonly ${appendonly}${appendonly === 'yes' ? ` (appendfsync ${fsync})` : ''}, save "${save}"`;
  } catch {
    // CONFIG may be disabled on a managed server; the figure stands without it.
  }
  // Whatever a crashed earlier run left under our prefix, never anyone else's keys.
  await deleteKeys(redis, prefix);
  const connection = { host, port, maxRetriesPerRequest: null };
  const name = 'deliveries';
  const queue: BullQueue = new Queue(name, { connection, prefix });

  return {
    prefix,
    pid,
    durability,
    async drain(messages, onStarted) {
      for (let i = 0; i < messages.length; i += 1000) {
        await queue.addBulk(
          messages.slice(i, i + 1000).map((message) => ({
            name: 'deliver',
            data: message,
            opts: { attempts: 3, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true },
          })),
        );
      }
      let completed = 0;
      let failed = 0;
      let finish: () => void = () => {};
      const done = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const worker = new Worker(name, async (job) => poster.post(job.data.id, job.data.body), {
        connection,
        prefix,
        concurrency,
        autorun: false,
      });
      worker.on('completed', () => {
        if (++completed === messages.length) finish();
      });
      worker.on('failed', (_job, error) => {
        if (failed++ < 3) console.error(`bullmq: job failed: ${error?.message}`);
      });
      worker.on('error', (_job, error) => console.error(`bullmq: ${String(error ?? _job)}`));
      await worker.waitUntilReady();
      await onStarted();
      const started = performance.now();
      const running = worker.run();
      await done;
      const seconds = (performance.now() - started) / 1000;
      await worker.close();
      await running;
      await queue.obliterate({ force: true });
      return seconds;
    },
    async close() {
      await queue.close();
      await deleteKeys(redis, prefix);
      await redis.quit();
    },
  };
}
