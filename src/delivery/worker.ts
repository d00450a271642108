import type { Agent } from 'undici';
import { isDatabaseUnavailable } from '../db/database.ts';
import { randomBase62 } from '../lib/ids.ts';
import { type ClaimedRow, claimDue, endpointOf } from './claim.ts';
import type { DeliveryContext } from './context.ts';
import { onLocalWake, WAKE_CHANNEL, wakeTag } from './fanout.ts';
import { buildMessage, storedHeaders, withEchoesMasked } from './message.ts';
import type { DeliveryOutcome } from './metrics.ts';
import { QueueStatistics } from './queue-statistics.ts';
import { type FinishedAttempt, metricKind } from './record.ts';
import { AttemptRecorder } from './recorder.ts';
import { type Jitter, MAX_ATTEMPTS, pauseOf } from './schedule.ts';
import { DEADLINE_MS, guardedAgent, isSuccess, sendMessage, type Transport } from './sender.ts';
import { SendSlots } from './slots.ts';

export interface WorkerOptions {
  /** Poll interval in real milliseconds, the fallback when a wake-up is missed; 0 turns it off. */
  pollMs?: number;
  /** Requests in flight in this process. */
  maxInFlight?: number;
  /** Requests in flight to a target at first and to one that answers slowly (slots.ts adapts it). */
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
  /** Called with each batch of attempts once written (metrics). */
  onRecorded?: (attempts: readonly FinishedAttempt[]) => void;
  /**
   * Only these targets, read at each claim (a listener hub's connected listeners); without it,
   * every target but listeners. An empty list claims nothing.
   */
  targets?: () => readonly string[];
  /** How a message reaches its target; without it, an HTTP POST through the guard. */
  transport?: Transport;
  /** How long an in-process wake-up waits for others to claim with it (default: 10 ms on PGlite, else 0). */
  wakeDelayMs?: number;
}

/** What a worker did since it started: its statements per delivery, for profiles and benchmarks. */
export interface WorkerCounts {
  /** Claims made, those that came back empty, and the rows they took. */
  claims: number;
  emptyClaims: number;
  claimedRows: number;
  /** Wake-ups: a notification from another process, or this process's own fan-out. */
  wakeUps: number;
  /** Notifications let pass (this worker's last claims on notifications found nothing). */
  wakeUpsLetPass: number;
  /** Claimed rows given back unsent (late for a rate limit's send time, a lease about to end). */
  givenBack: number;
  /** Batches of attempts written, and the attempts in them. */
  recordBatches: number;
  recordedAttempts: number;
}

export interface DeliveryWorker {
  readonly id: string;
  counts(): WorkerCounts;
  /** Claims and sends everything due now, and returns once all of it is recorded: for tests. */
  tick(): Promise<number>;
  wake(): void;
  /** When the claim loop last turned with the database answering (readiness), or null. */
  heartbeat(): Date | null;
  /** Requests in flight now. */
  inFlight(): number;
  /**
   * Settles once the first claim is done and the first of the requests it started is answered (at
   * once when it claimed nothing): from then on the process may hold its event loop (loading the
   * API) without holding back the first delivery.
   */
  readonly started: Promise<void>;
  /** Stops claiming and waits (bounded) for the requests in flight and their records. */
  stop(): Promise<void>;
}

/** What an attempt did to its delivery, for the deliveries counter. */
function outcomeOf(attempt: FinishedAttempt): DeliveryOutcome {
  if (isSuccess(attempt.result)) return 'succeeded';
  const gone = attempt.result.status_code === 410 && attempt.targetKind !== 'app_events';
  if (gone || attempt.delivery.attempt_count + 1 >= MAX_ATTEMPTS) return 'failed';
  return 'failed_attempt';
}

/**
 * A rate-limited endpoint's message goes at its send time (the claim's, decision 0027) or within
 * this after it; later, it is given back for a later send time: sent late, it could come close
 * behind the next worker's message and break the limit.
 */
const LATE_MS = 15;
/** The claim gives send times up to a second ahead: claim again for limited endpoints halfway. */
const RATE_RECLAIM_MS = 500;
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
  const transport: Transport =
    options.transport ?? ((_targetId, message) => sendMessage(agent as Agent, message, { deadlineMs }));
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
  /** Writes to the queue outside the claim (rows put off until a pause ends), awaited by settle. */
  const writing = new Set<Promise<void>>();
  /**
   * Targets whose receiver asked for a pause (Retry-After), until when (clock time): known here at
   * once, before the record that writes paused_until for every worker is committed.
   */
  const paused = new Map<string, number>();
  /** When each held rate-limited row is due, in performance.now() time. */
  const dueAt = new WeakMap<ClaimedRow, number>();
  /** When the lease of each held row in a shipment's line ends, in performance.now() time. */
  const leaseEndsAt = new WeakMap<ClaimedRow, number>();
  /** Rate-limited rows waiting for their send time, by the timer that will enqueue them. */
  const timed = new Map<NodeJS.Timeout, { rows: ClaimedRow[]; done: () => void; promise: Promise<void> }>();
  let reclaimTimer: NodeJS.Timeout | null = null;

  /** Holds rate-limited rows until their send time, then hands them to the slots. */
  function holdUntilDue(rows: readonly ClaimedRow[], now: Date, realNow: number): void {
    const groups = new Map<number, ClaimedRow[]>();
    for (const row of rows) {
      const due = realNow + (new Date(row.send_at as Date).getTime() - now.getTime());
      dueAt.set(row, due);
      const at = Math.ceil(due);
      groups.set(at, [...(groups.get(at) ?? []), row]);
    }
    for (const [at, group] of groups) {
      let done = () => {};
      const promise = new Promise<void>((resolve) => {
        done = resolve;
      });
      const timer = setTimeout(
        () => {
          timed.delete(timer);
          // Its receiver may have asked for a pause meanwhile.
          const now = ctx.clock.now();
          const held = group.filter((row) => pausedHere(row.endpoint_id, now));
          for (const row of held) putOff([row.id], new Date(paused.get(row.endpoint_id) as number));
          slots.enqueue(held.length === 0 ? group : group.filter((row) => !held.includes(row)));
          dispatch();
          done();
        },
        Math.max(0, at - performance.now()),
      );
      timed.set(timer, { rows: group, done, promise });
    }
    if (!reclaimTimer && !stopping) {
      reclaimTimer = setTimeout(() => {
        reclaimTimer = null;
        void pump();
      }, RATE_RECLAIM_MS);
      reclaimTimer.unref();
    }
  }

  /**
   * Moves the lease of rows this worker holds: null gives them back to the queue at once, a time
   * keeps them from every worker until then. Written in the background; a failure leaves the
   * lease to expire.
   */
  function setLease(ids: readonly string[], lockedUntil: Date | null, what: string): void {
    if (ids.length === 0) return;
    const task = ctx.db
      .updateTable('webhook_queue')
      .set(lockedUntil ? { locked_until: lockedUntil } : { locked_by: null, locked_until: null })
      .where('delivery_id', 'in', ids)
      .where('locked_by', '=', id)
      .execute()
      .then(
        () => {},
        (err: unknown) => ctx.log.warn({ err }, `${what} failed; their leases will expire`),
      )
      .finally(() => writing.delete(task));
    writing.add(task);
  }

  /** Gives claimed rows back to the queue at once (their lease ends). */
  function giveBack(ids: readonly string[]): void {
    counts.givenBack += ids.length;
    setLease(ids, null, 'giving back late deliveries');
  }

  function pausedHere(targetId: string, now: Date): boolean {
    const until = paused.get(targetId);
    if (until === undefined) return false;
    if (until > now.getTime()) return true;
    paused.delete(targetId);
    return false;
  }

  /**
   * Rows claimed for a paused target are not sent: their lease is moved to the pause's end, so
   * that no worker claims them before then (and they use none of their attempts meanwhile). A
   * lease ends once it is past (locked_until < now) and a pause at its end: one millisecond less.
   */
  function putOff(ids: readonly string[], until: Date): void {
    setLease(ids, new Date(until.getTime() - 1), 'putting off paused deliveries');
  }

  function dispatch(): void {
    // Stopping: nothing new starts (a claim answered after the stop began must not send to a
    // receiver that never answers and hold the stop for a deadline); its rows are given back.
    if (stopping) return;
    for (const row of slots.takeStartable()) send(row);
  }

  async function attempt(row: ClaimedRow): Promise<FinishedAttempt | null> {
    const due = dueAt.get(row);
    // Too late for its send time: given back, to be claimed again with a new one.
    if (due !== undefined && performance.now() > due + LATE_MS) return null;
    // Its lease would end in flight: given back, to be claimed again with a lease of its own.
    const leaseEnd = leaseEndsAt.get(row);
    if (leaseEnd !== undefined && performance.now() + deadlineMs + LINE_LEASE_MARGIN_MS > leaseEnd)
      return null;
    const now = ctx.clock.now();
    const message = buildMessage(ctx, row, endpointOf(row), now);
    const kind = metricKind(row.kind);
    ctx.metrics.sendStarted(kind);
    const result = withEchoesMasked(
      message,
      await transport(row.endpoint_id, message, deadlineMs).finally(() => ctx.metrics.sendFinished(kind)),
    );
    ctx.metrics.attemptDuration(result.duration_ms / 1000, kind);
    return {
      delivery: row,
      endpointFailing: row.failing_since !== null,
      targetKind: row.kind,
      trigger: 'scheduled',
      attemptedAt: now,
      headers: storedHeaders(message),
      result,
    };
  }

  function send(row: ClaimedRow): void {
    let took = { durationMs: 0, timedOut: false };
    const task = attempt(row)
      .then((finished) => {
        if (!finished) {
          giveBack([row.id]);
          return;
        }
        took = { durationMs: finished.result.duration_ms, timedOut: finished.result.error === 'timeout' };
        if (finished.result.status_code === 410 && row.kind !== 'app_events')
          slots.dropQueue(row.endpoint_id);
        const pause = pauseOf(finished.result, finished.attemptedAt);
        if (pause) {
          paused.set(row.endpoint_id, Math.max(pause.getTime(), paused.get(row.endpoint_id) ?? 0));
          capped.delete(row.endpoint_id);
          putOff(slots.dropQueue(row.endpoint_id), new Date(paused.get(row.endpoint_id) as number));
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

  /** Where the next claim's walk over the targets starts (claim.ts): targets take turns. */
  let cursor = '';
  /** Targets whose last claim took all the room they had: they may have more due. */
  const capped = new Set<string>();

  /** After a claim: which targets it took all it could for (their room, or the claim's limit). */
  function noteCapped(rows: readonly ClaimedRow[], room: ReadonlyMap<string, number>, limit: number): void {
    const taken = new Map<string, number>();
    for (const row of rows) taken.set(row.endpoint_id, (taken.get(row.endpoint_id) ?? 0) + 1);
    // The claim serves targets in turn: when its limit cut it short, only the last one served may
    // have been cut. (Marking every target of a full claim made each send to 64 targets with one
    // row each start a claim that came back empty: issue 25.)
    const cut = rows.length >= limit ? rows.at(-1)?.endpoint_id : undefined;
    for (const [targetId, count] of taken) {
      if (targetId === cut || count >= (room.get(targetId) ?? slots.heldForNewTarget)) capped.add(targetId);
      else capped.delete(targetId);
    }
    // Bounded: a target left out is claimed for by the next wake-up or poll.
    if (capped.size > 10_000) capped.clear();
  }

  async function claimLoop(): Promise<number> {
    let total = 0;
    do {
      claimAgain = false;
      // Where a run of claims that each took all there was where they went began, and whether it
      // has gone past the last target since: once round, the round is over.
      let coverFrom: string | null = null;
      let wrapped = false;
      while (!stopping && slots.held < maxHeld) {
        // Claims come in batches: a claim for a row or two as each send ends costs a statement
        // per delivery (on PGlite, where statements queue behind each other, ten times slower).
        if (slots.held > 0 && maxHeld - slots.held < minClaim) break;
        const targets = options.targets?.();
        if (targets?.length === 0) break;
        const now = ctx.clock.now();
        const limit = Math.min(batchSize, maxHeld - slots.held);
        const from = cursor;
        const room = slots.room();
        const claimedAtReal = performance.now();
        const { rows, next, walkedTo } = await claimDue(ctx.db, {
          ...(targets ? { targets } : {}),
          workerId: id,
          now,
          leaseUntil: new Date(now.getTime() + leaseMs),
          limit,
          perEndpoint: slots.heldForNewTarget,
          room,
          after: from,
        });
        cursor = next;
        counts.claims += 1;
        counts.claimedRows += rows.length;
        if (rows.length === 0) counts.emptyClaims += 1;
        noteCapped(rows, room, limit);
        for (const row of rows) if (row.in_line) leaseEndsAt.set(row, claimedAtReal + leaseMs);
        if (paused.size === 0 && !rows.some((row) => row.send_at)) slots.enqueue(rows);
        else {
          const heldBack = new Map<string, string[]>();
          const sendable: ClaimedRow[] = [];
          const limited: ClaimedRow[] = [];
          for (const row of rows) {
            if (pausedHere(row.endpoint_id, now))
              heldBack.set(row.endpoint_id, [...(heldBack.get(row.endpoint_id) ?? []), row.id]);
            else if (row.send_at) limited.push(row);
            else sendable.push(row);
          }
          for (const [targetId, ids] of heldBack) putOff(ids, new Date(paused.get(targetId) as number));
          slots.enqueue(sendable);
          if (limited.length > 0) holdUntilDue(limited, now, claimedAtReal);
        }
        dispatch();
        // A claim that came back well filled: there is a backlog, and the plan must be the right one.
        if (rows.length >= Math.min(limit, 16)) statistics.backlogSeen();
        total += rows.length;
        // A full claim may have left rows where its walk went, unless its limit fell on the walk's
        // last target (which is then claimed for as it sends): go on, and count the round afresh.
        if (rows.length >= limit && rows.at(-1)?.endpoint_id !== walkedTo) {
          coverFrom = null;
          continue;
        }
        // This walk took all its targets' room would (a target held back by its room is claimed
        // for as it sends): go on round the targets, and stop once round. A claim that stopped
        // at a wrap to confirm, empty, what the claims before it had just taken cost a statement
        // per round (issue 25).
        if (coverFrom === null) {
          coverFrom = from;
          wrapped = false;
        }
        if (next === '') {
          if (wrapped || coverFrom === '') break;
          wrapped = true;
        } else if (wrapped && next >= coverFrom) break;
      }
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
    while (sending.size > 0 || recorder.busy || claiming || writing.size > 0 || timed.size > 0) {
      await Promise.all([...sending, ...writing, ...[...timed.values()].map((t) => t.promise)]);
      if (claiming) await claiming;
      await recorder.flush();
    }
  }

  /** Gives back claimed rows not sent, so that another worker need not wait for the lease. */
  async function releaseQueued(): Promise<void> {
    const ids = slots.drainQueued();
    for (const [timer, group] of timed) {
      clearTimeout(timer);
      ids.push(...group.rows.map((row) => row.id));
      group.done();
    }
    timed.clear();
    if (ids.length === 0) return;
    await ctx.db
      .updateTable('webhook_queue')
      .set({ locked_by: null, locked_until: null })
      .where('delivery_id', 'in', ids)
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
      if (reclaimTimer) clearTimeout(reclaimTimer);
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
      if (agent) await Promise.race([agent.destroy().catch(() => {}), bounded(1000)]);
    },
  };
}
