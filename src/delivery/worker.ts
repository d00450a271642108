import type { Agent } from 'undici';
import { isDatabaseUnavailable } from '../db/database.ts';
import { randomBase62 } from '../lib/ids.ts';
import type { ClaimedRow } from './claim.ts';
import type { DeliveryContext } from './context.ts';
import { Destinations } from './destinations/index.ts';
import { onLocalWake, WAKE_CHANNEL, wakeTag } from './fanout.ts';
import { QueueStatistics } from './queue-statistics.ts';
import { type FinishedAttempt, metricKind } from './record.ts';
import { AttemptRecorder } from './recorder.ts';
import { pauseOf } from './schedule.ts';
import { DEADLINE_MS, guardedAgent, type Transport } from './sender.ts';
import { SendSlots } from './slots.ts';
import { attemptRow, outcomeOf } from './worker-attempt.ts';
import { ClaimRounds } from './worker-claims.ts';
import { HeldRows } from './worker-timers.ts';
import type { DeliveryWorker, WorkerCounts, WorkerOptions } from './worker-types.ts';

export type { DeliveryWorker, WorkerCounts, WorkerOptions } from './worker-types.ts';

/**
 * A rate-limited endpoint's message goes at its send time (the claim's, decision 0027) or within
 * this after it; later, it is given back for a later send time: sent late, it could come close
 * behind the next worker's message and break the limit.
 */
const LATE_MS = 15;
/**
 * A message in a shipment's line starts only if its lease outlasts the request by this much: the
 * next message of its shipment is claimable once the lease is over, and must not meet it in flight.
 */
const LINE_LEASE_MARGIN_MS = 5_000;
const WAKE_BACKOFF_FIRST_MS = 5;
const WAKE_BACKOFF_MAX_MS = 50;
const CLAIM_RETRY_FIRST_MS = 500;
const CLAIM_RETRY_MAX_MS = 5_000;
const PGLITE_WAKE_DELAY_MS = 10;
/**
 * On PGlite every statement runs in WebAssembly on the one connection everything else waits for,
 * and a claim has a fixed cost before its first row: fewer, larger claims, and more held ahead.
 * Measured before the claim became a function (decision 0018): 4.5 ms for 32 rows against
 * 12.5 ms for 150 (docs/performance.md).
 */
const PGLITE_BATCH = 256;
const PGLITE_HELD_PER_SLOT = 8;

/**
 * The delivery worker (ARCHITECTURE.md "How an event flows", steps 3 and 4): claims due deliveries
 * into its slots (slots.ts), sends them (sender.ts) and hands the results to the recorder
 * (recorder.ts). A database outage pauses claiming with a growing wait; what was sent meanwhile is
 * recorded once the database is back.
 */
export function startDeliveryWorker(ctx: DeliveryContext, options: WorkerOptions = {}): DeliveryWorker {
  const id = `wrk_${randomBase62(16)}`;
  const maxInFlight = options.maxInFlight ?? 64;
  const perTarget = options.perEndpoint ?? 8;
  const embedded = ctx.database.engine === 'pglite';
  const batchSize = options.batchSize ?? (embedded ? PGLITE_BATCH : 64);
  const deadlineMs = options.deadlineMs ?? DEADLINE_MS;
  const leaseMs = options.leaseMs ?? Math.max(60_000, deadlineMs * 3);
  // Rows held (in flight and queued) per target: the last queued row of a slow target waits
  // (held / perTarget - 1) deadlines before it is sent, and must still be inside its lease.
  const rounds = Math.min(5, Math.max(1, Math.floor(leaseMs / deadlineMs) - 1));
  const slots = new SendSlots({ maxInFlight, perTarget, rounds });
  const maxHeld = Math.max(maxInFlight * (embedded ? PGLITE_HELD_PER_SLOT : 2), slots.heldForNewTarget);
  const minClaim = Math.max(1, Math.floor(batchSize / 2));
  const agent: Agent | null = options.transport
    ? null
    : // A target that answers fast may earn every slot (slots.ts): as many connections.
      guardedAgent(ctx, { deadlineMs, connectionsPerOrigin: maxInFlight });
  // HTTPS through the agent, brokers through a connection per destination (destinations/).
  const destinations = agent ? new Destinations(ctx, agent, deadlineMs) : null;
  const transport: Transport = options.transport ?? (destinations as Destinations).transport;
  const recorder = new AttemptRecorder(ctx, {
    ...(options.jitter ? { jitter: options.jitter } : {}),
    onRecorded(attempts) {
      counts.recordBatches += 1;
      counts.recordedAttempts += attempts.length;
      for (const attempt of attempts)
        ctx.metrics.deliveryOutcome(metricKind(attempt.targetKind), outcomeOf(attempt));
      options.onRecorded?.(attempts);
    },
  });

  const statistics = new QueueStatistics(ctx);
  const counts: WorkerCounts = {
    claims: 0,
    emptyClaims: 0,
    claimedRows: 0,
    wakeUps: 0,
    wakeUpsLetPass: 0,
    givenBack: 0,
    recordBatches: 0,
    recordedAttempts: 0,
  };
  let stopping = false;
  let claiming: Promise<number> | null = null;
  let claimAgain = false;
  let lastTurn: Date | null = null;
  let claimRetryMs = CLAIM_RETRY_FIRST_MS;
  let claimPausedUntil = 0;
  const sending = new Set<Promise<void>>();
  const held = new HeldRows(ctx, {
    workerId: id,
    slots,
    stopping: () => stopping,
    dispatch,
    pump: () => void pump(),
    gaveBack(count) {
      counts.givenBack += count;
    },
  });
  const { paused } = held;
  const claims = new ClaimRounds(
    ctx,
    {
      workerId: id,
      slots,
      held,
      counts,
      statistics,
      ...(options.targets ? { targets: options.targets } : {}),
      stopping: () => stopping,
      dispatch,
    },
    { batchSize, maxHeld, minClaim, leaseMs },
  );
  const { capped } = claims;

  function dispatch(): void {
    // Stopping: nothing new starts (a claim answered after the stop began must not send to a
    // receiver that never answers and hold the stop for a deadline); its rows are given back.
    if (stopping) return;
    for (const row of slots.takeStartable()) send(row);
  }

  async function attempt(row: ClaimedRow): Promise<FinishedAttempt | null> {
    const due = held.dueAt.get(row);
    // Too late for its send time: given back, to be claimed again with a new one.
    if (due !== undefined && performance.now() > due + LATE_MS) return null;
    // Its lease would end in flight: given back, to be claimed again with a lease of its own.
    const leaseEnd = held.leaseEndsAt.get(row);
    if (leaseEnd !== undefined && performance.now() + deadlineMs + LINE_LEASE_MARGIN_MS > leaseEnd)
      return null;
    return attemptRow(ctx, row, transport, deadlineMs);
  }

  function send(row: ClaimedRow): void {
    let took = { durationMs: 0, timedOut: false };
    const task = attempt(row)
      .then((finished) => {
        if (!finished) {
          held.giveBack([row.id]);
          return;
        }
        took = { durationMs: finished.result.duration_ms, timedOut: finished.result.error === 'timeout' };
        if (finished.result.status_code === 410 && row.kind !== 'app_events')
          slots.dropQueue(row.endpoint_id);
        const pause = pauseOf(finished.result, finished.attemptedAt);
        if (pause) {
          paused.set(row.endpoint_id, Math.max(pause.getTime(), paused.get(row.endpoint_id) ?? 0));
          capped.delete(row.endpoint_id);
          held.putOff(slots.dropQueue(row.endpoint_id), new Date(paused.get(row.endpoint_id) as number));
        }
        recorder.add(finished);
      })
      .catch((err: unknown) => ctx.log.error({ err, deliveryId: row.id }, 'webhook send failed'))
      .finally(() => {
        slots.finished(row.endpoint_id, took.durationMs, took.timedOut);
        sending.delete(task);
        if (stopping) return;
        dispatch();
        // Claim again once this target's queue runs low, if the last claim left it rows for want
        // of room: claims come in rounds, not one per send.
        if (capped.has(row.endpoint_id) && slots.runningLow(row.endpoint_id)) void pump();
      });
    sending.add(task);
  }

  async function claimLoop(): Promise<number> {
    let total = 0;
    do {
      claimAgain = false;
      total += await claims.round();
    } while (claimAgain && !stopping);
    lastTurn = ctx.clock.now();
    return total;
  }

  /** Starts a claim round, or asks the running one to go round again. */
  function pump(): Promise<number> {
    if (stopping || Date.now() < claimPausedUntil) return Promise.resolve(0);
    if (claiming) {
      claimAgain = true;
      return claiming;
    }
    claiming = claimLoop()
      .then((claimed) => {
        claimRetryMs = CLAIM_RETRY_FIRST_MS;
        return claimed;
      })
      .catch((err: unknown) => {
        if (!isDatabaseUnavailable(err)) {
          ctx.log.error({ err }, 'claiming webhook deliveries failed');
          return 0;
        }
        // The database is away: wait longer each time; the poll tries again after the pause.
        ctx.log.warn({ err, retryInMs: claimRetryMs }, 'claiming waits for the database');
        claimPausedUntil = Date.now() + claimRetryMs;
        claimRetryMs = Math.min(claimRetryMs * 2, CLAIM_RETRY_MAX_MS);
        return 0;
      })
      .finally(() => {
        claiming = null;
      });
    return claiming;
  }

  async function settle(): Promise<void> {
    while (sending.size > 0 || recorder.busy || claiming || held.writing.size > 0 || held.timedCount > 0) {
      await Promise.all([...sending, ...held.writing, ...held.timedSettled()]);
      if (claiming) await claiming;
      await recorder.flush();
    }
  }

  /** Gives back claimed rows not sent, so that another worker need not wait for the lease. */
  async function releaseQueued(): Promise<void> {
    const ids = [...slots.drainQueued(), ...held.takeTimed()];
    if (ids.length === 0) return;
    await ctx.db
      .updateTable('webhook_deliveries')
      .set({ locked_by: null, locked_until: null })
      .where('id', 'in', ids)
      .where('locked_by', '=', id)
      .execute();
  }

  // On PGlite every statement waits for the one before it: wake-ups that come close together
  // (events committed one at a time) share one claim, a few milliseconds later.
  const wakeDelayMs = options.wakeDelayMs ?? (embedded ? PGLITE_WAKE_DELAY_MS : 0);
  // Every worker hears every notification. One whose claim on a notification found nothing (a
  // worker elsewhere took it, or this one has no room) lets the next ones pass for a while,
  // longer each time: N workers on a trickle of commits made N claims a commit, most of them empty
  // (issue 25). The worker that keeps finding work keeps claiming at once; the poll is the floor.
  let notificationBackoffMs = 0;
  let notificationsLetPassUntil = 0;
  let wakeTimer: NodeJS.Timeout | null = null;
  function wakeSoon(): void {
    counts.wakeUps += 1;
    if (wakeDelayMs === 0) {
      void pump();
      return;
    }
    if (wakeTimer) return;
    wakeTimer = setTimeout(() => {
      wakeTimer = null;
      void pump();
    }, wakeDelayMs);
  }

  ctx.health.workerHeartbeat = () => lastTurn;
  const unsubscribes: Array<() => unknown> = [];
  if (options.listen ?? true) {
    unsubscribes.push(onLocalWake(ctx, wakeSoon));
    // An empty payload comes after LISTEN reconnects: what was notified meanwhile was missed.
    ctx.database
      .listen(WAKE_CHANNEL, (tag) => {
        if (tag === wakeTag(ctx)) return;
        counts.wakeUps += 1;
        if (tag !== '' && performance.now() < notificationsLetPassUntil) {
          counts.wakeUpsLetPass += 1;
          return;
        }
        void pump().then((claimed) => {
          if (claimed > 0) notificationBackoffMs = 0;
          else {
            notificationBackoffMs = Math.min(
              WAKE_BACKOFF_MAX_MS,
              Math.max(WAKE_BACKOFF_FIRST_MS, notificationBackoffMs * 2),
            );
            notificationsLetPassUntil = performance.now() + notificationBackoffMs;
          }
        });
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
  const started =
    (options.listen ?? true)
      ? pump().then(() => (sending.size > 0 ? Promise.race(sending) : undefined))
      : Promise.resolve();

  return {
    id,
    counts: () => ({ ...counts }),
    async tick() {
      claimPausedUntil = 0;
      // Driven by hand, the clock moves between turns: idle broker connections close by it.
      destinations?.closeIdle();
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
    heartbeat: () => lastTurn,
    inFlight: () => slots.inFlight,
    started,
    async stop() {
      stopping = true;
      ctx.health.workerHeartbeat = null;
      if (wakeTimer) clearTimeout(wakeTimer);
      held.stopReclaiming();
      if (timer) clearInterval(timer);
      const bounded = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
      for (const unsubscribe of unsubscribes.splice(0)) await Promise.race([unsubscribe(), bounded(1000)]);
      await Promise.race([settle(), bounded(deadlineMs + 1000)]);
      recorder.stop();
      // Bounded: with the database away the leases expire on their own.
      const released = releaseQueued().catch((err: unknown) =>
        ctx.log.warn({ err }, 'releasing claims failed'),
      );
      await Promise.race([released, bounded(2000)]);
      if (destinations) await Promise.race([destinations.close(), bounded(1000)]);
      if (agent) await Promise.race([agent.destroy().catch(() => {}), bounded(1000)]);
    },
  };
}
