import type { FinishedAttempt } from './record.ts';
import type { Jitter } from './schedule.ts';
import type { Transport } from './sender.ts';

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
