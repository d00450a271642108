import { sql } from 'kysely';
import type { Agent } from 'undici';
import type { AppContext } from '../../context.ts';
import { randomBase62 } from '../../lib/ids.ts';
import { reportDisabled } from './attempt.ts';
import { type ClaimedRow, claimDue, endpointOf } from './claim.ts';
import { onLocalWake, PROCESS_TAG, WAKE_CHANNEL } from './fanout.ts';
import { buildMessage, storedHeaders } from './message.ts';
import { type FinishedAttempt, recordAttempts } from './record.ts';
import type { Jitter } from './schedule.ts';
import { DEADLINE_MS, guardedAgent, sendMessage } from './sender.ts';

export interface WorkerOptions {
  /** Poll interval in real milliseconds, the fallback when a wake-up is missed; 0 turns it off. */
  pollMs?: number;
  /** Requests in flight in this process. */
  maxInFlight?: number;
  /** Requests in flight to one endpoint, so that a slow endpoint cannot take every slot. */
  perEndpoint?: number;
  /** Rows claimed at most per claim. */
  batchSize?: number;
  /** How long a claim is ours; must outlast the deadline, or a slow attempt would be claimed twice. */
  leaseMs?: number;
  /** The deadline of one attempt (connect to last byte read). */
  deadlineMs?: number;
  /** Listen for wake-ups (LISTEN/NOTIFY and in-process); tests that drive `tick` may turn it off. */
  listen?: boolean;
  jitter?: Jitter;
}

export interface DeliveryWorker {
  readonly id: string;
  /** Claims and sends everything due now, and returns once all of it is recorded: for tests. */
  tick(): Promise<number>;
  wake(): void;
  /** Stops claiming and waits (bounded) for the requests in flight and their records. */
  stop(): Promise<void>;
}

const FLUSH_DELAY_MS = 5;
const VACUUM_EVERY = 2000;

/** The delivery worker (ARCHITECTURE.md "How an event flows", steps 3 and 4). */
export function startDeliveryWorker(ctx: AppContext, options: WorkerOptions = {}): DeliveryWorker {
  const id = `wrk_${randomBase62(16)}`;
  const maxInFlight = options.maxInFlight ?? 64;
  const perEndpoint = options.perEndpoint ?? 8;
  const batchSize = options.batchSize ?? 64;
  const deadlineMs = options.deadlineMs ?? DEADLINE_MS;
  const leaseMs = options.leaseMs ?? Math.max(60_000, deadlineMs * 3);
  // Rows held (in flight and queued) per endpoint: the last queued row of a slow endpoint waits
  // (held / perEndpoint - 1) deadlines before it is sent, and must still be inside its lease.
  const rounds = Math.min(5, Math.max(1, Math.floor(leaseMs / deadlineMs) - 1));
  const heldPerEndpoint = perEndpoint * rounds;
  const maxHeld = Math.max(maxInFlight * 2, heldPerEndpoint);
  const agent: Agent = guardedAgent(ctx, { deadlineMs, connectionsPerOrigin: perEndpoint });

  let stopping = false;
  let inFlight = 0;
  const byEndpoint = new Map<string, number>();
  // Claimed rows waiting for a slot: a claim fetches up to one round ahead so that the next
  // sends do not wait for a database round trip. Bounded per endpoint, so leases outlast the wait.
  const queued = new Map<string, ClaimedRow[]>();
  let queuedCount = 0;
  let claiming: Promise<number> | null = null;
  let claimAgain = false;
  const finished: FinishedAttempt[] = [];
  let flushing: Promise<void> | null = null;
  const sending = new Set<Promise<void>>();

  function room(): Map<string, number> {
    const map = new Map<string, number>();
    for (const endpointId of new Set([...byEndpoint.keys(), ...queued.keys()])) {
      const held = (byEndpoint.get(endpointId) ?? 0) + (queued.get(endpointId)?.length ?? 0);
      map.set(endpointId, heldPerEndpoint - held);
    }
    return map;
  }

  function flush(): Promise<void> {
    if (flushing) return flushing;
    flushing = (async () => {
      while (finished.length > 0) {
        const batch = finished.splice(0);
        try {
          await reportDisabled(ctx, await recordAttempts(ctx, batch, options.jitter));
          await vacuumNowAndThen(batch.length);
        } catch (err) {
          // The leases expire and the deliveries are attempted again: at least once.
          ctx.log.error({ err }, 'recording webhook attempts failed');
        }
      }
    })().finally(() => {
      flushing = null;
    });
    return flushing;
  }

  // PGlite runs no autovacuum: dead row versions of a busy queue pile up in the claim's index and
  // every claim wades through them. PostgreSQL's autovacuum does this on its own.
  let recordedSinceVacuum = 0;
  async function vacuumNowAndThen(recorded: number): Promise<void> {
    if (ctx.database.engine !== 'pglite') return;
    recordedSinceVacuum += recorded;
    if (recordedSinceVacuum < VACUUM_EVERY) return;
    recordedSinceVacuum = 0;
    await sql`VACUUM webhook_deliveries`.execute(ctx.db);
  }

  /** Records after a moment, so that attempts finishing together share one transaction. */
  let flushTimer: NodeJS.Timeout | null = null;
  function scheduleFlush(): void {
    if (flushTimer) return;
    flushTimer = setTimeout(() => {
      flushTimer = null;
      void flush();
    }, FLUSH_DELAY_MS);
  }

  /** Starts queued sends while there are slots, taking endpoints in turn. */
  function dispatch(): void {
    let started = true;
    while (started && inFlight < maxInFlight) {
      started = false;
      for (const [endpointId, rows] of queued) {
        if (inFlight >= maxInFlight) break;
        if ((byEndpoint.get(endpointId) ?? 0) >= perEndpoint) continue;
        const row = rows.shift();
        if (!row) continue;
        queuedCount -= 1;
        if (rows.length === 0) queued.delete(endpointId);
        send(row);
        started = true;
      }
    }
  }

  /** Drops what waits for an endpoint that answered 410: recording cancels those deliveries. */
  function dropQueue(endpointId: string): void {
    queuedCount -= queued.get(endpointId)?.length ?? 0;
    queued.delete(endpointId);
  }

  function send(row: ClaimedRow): void {
    inFlight += 1;
    byEndpoint.set(row.endpoint_id, (byEndpoint.get(row.endpoint_id) ?? 0) + 1);
    const task = (async () => {
      const now = ctx.clock.now();
      const message = buildMessage(ctx, row, endpointOf(row), now);
      const result = await sendMessage(agent, message, { deadlineMs });
      if (result.status_code === 410) dropQueue(row.endpoint_id);
      finished.push({
        delivery: row,
        endpointFailing: row.failing_since !== null,
        trigger: 'scheduled',
        attemptedAt: now,
        headers: storedHeaders(message),
        result,
      });
    })()
      .catch((err: unknown) => ctx.log.error({ err, deliveryId: row.id }, 'webhook send failed'))
      .finally(() => {
        inFlight -= 1;
        const left = (byEndpoint.get(row.endpoint_id) ?? 1) - 1;
        if (left === 0) byEndpoint.delete(row.endpoint_id);
        else byEndpoint.set(row.endpoint_id, left);
        sending.delete(task);
        scheduleFlush();
        if (!stopping) dispatch();
        // Claim again once this endpoint's queue runs low: claims come in rounds, not one per send.
        if ((queued.get(row.endpoint_id)?.length ?? 0) < perEndpoint) void pump();
      });
    sending.add(task);
  }

  async function claimLoop(): Promise<number> {
    let total = 0;
    do {
      claimAgain = false;
      while (!stopping && inFlight + queuedCount < maxHeld) {
        const now = ctx.clock.now();
        const rows = await claimDue(ctx.db, {
          workerId: id,
          now,
          leaseUntil: new Date(now.getTime() + leaseMs),
          limit: Math.min(batchSize, maxHeld - inFlight - queuedCount),
          perEndpoint: heldPerEndpoint,
          room: room(),
        });
        for (const row of rows) {
          const list = queued.get(row.endpoint_id) ?? [];
          list.push(row);
          queued.set(row.endpoint_id, list);
        }
        queuedCount += rows.length;
        dispatch();
        total += rows.length;
        if (rows.length === 0) break;
      }
    } while (claimAgain && !stopping);
    return total;
  }

  /** Starts a claim round, or asks the running one to go round again. */
  function pump(): Promise<number> {
    if (stopping) return Promise.resolve(0);
    if (claiming) {
      claimAgain = true;
      return claiming;
    }
    claiming = claimLoop()
      .catch((err: unknown) => {
        ctx.log.error({ err }, 'claiming webhook deliveries failed');
        return 0;
      })
      .finally(() => {
        claiming = null;
      });
    return claiming;
  }

  async function settle(): Promise<void> {
    while (sending.size > 0 || finished.length > 0 || flushing || claiming || flushTimer) {
      await Promise.all([...sending]);
      if (claiming) await claiming;
      if (flushTimer) {
        clearTimeout(flushTimer);
        flushTimer = null;
      }
      await flush();
    }
  }

  /** Gives back claimed rows not sent, so that another worker need not wait for the lease. */
  async function releaseQueued(): Promise<void> {
    const ids = [...queued.values()].flat().map((row) => row.id);
    queued.clear();
    queuedCount = 0;
    if (ids.length === 0) return;
    await ctx.db
      .updateTable('webhook_deliveries')
      .set({ locked_by: null, locked_until: null })
      .where('id', 'in', ids)
      .where('locked_by', '=', id)
      .execute();
  }

  const unsubscribes: Array<() => unknown> = [];
  if (options.listen ?? true) {
    unsubscribes.push(onLocalWake(ctx, () => void pump()));
    ctx.database
      .listen(WAKE_CHANNEL, (tag) => {
        if (tag !== PROCESS_TAG) void pump();
      })
      .then(
        (stop) => {
          if (stopping) void stop();
          else unsubscribes.push(stop);
        },
        (err: unknown) => ctx.log.warn({ err }, 'LISTEN failed; polling only'),
      );
  }
  const pollMs = options.pollMs ?? 1000;
  const timer = pollMs > 0 ? setInterval(() => void pump(), pollMs) : null;
  timer?.unref();
  if (options.listen ?? true) void pump();

  return {
    id,
    async tick() {
      let total = 0;
      for (;;) {
        const claimed = await pump();
        await settle();
        total += claimed;
        if (claimed === 0) return total;
      }
    },
    wake() {
      void pump();
    },
    async stop() {
      stopping = true;
      if (timer) clearInterval(timer);
      const bounded = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
      for (const unsubscribe of unsubscribes.splice(0)) await Promise.race([unsubscribe(), bounded(1000)]);
      await Promise.race([settle(), bounded(deadlineMs + 1000)]);
      await releaseQueued().catch((err: unknown) => ctx.log.warn({ err }, 'releasing claims failed'));
      await Promise.race([agent.destroy().catch(() => {}), bounded(1000)]);
    },
  };
}
