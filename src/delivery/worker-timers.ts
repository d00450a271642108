import type { ClaimedRow } from './claim.ts';
import type { DeliveryContext } from './context.ts';
import type { SendSlots } from './slots.ts';

/** The claim gives send times up to a second ahead: claim again for limited endpoints halfway. */
const RATE_RECLAIM_MS = 500;

/** What the held rows need of their worker. */
export interface HeldRowsOwner {
  workerId: string;
  slots: SendSlots;
  stopping(): boolean;
  dispatch(): void;
  pump(): void;
  gaveBack(count: number): void;
}

/**
 * The worker's timers and leases: rows held until their send time (rate limits, decision 0027),
 * targets paused by their receiver (Retry-After), and the leases moved for both. What it writes
 * to the queue outside the claim is in `writing`, for the worker to await.
 */
export class HeldRows {
  /**
   * Targets whose receiver asked for a pause (Retry-After), until when (clock time): known here at
   * once, before the record that writes paused_until for every worker is committed.
   */
  readonly paused = new Map<string, number>();
  /** When each held rate-limited row is due, in performance.now() time. */
  readonly dueAt = new WeakMap<ClaimedRow, number>();
  /** When the lease of each held row in a shipment's line ends, in performance.now() time. */
  readonly leaseEndsAt = new WeakMap<ClaimedRow, number>();
  /** Writes to the queue outside the claim (rows put off until a pause ends), awaited by settle. */
  readonly writing = new Set<Promise<void>>();
  /** Rate-limited rows waiting for their send time, by the timer that will enqueue them. */
  readonly #timed = new Map<
    NodeJS.Timeout,
    { rows: ClaimedRow[]; done: () => void; promise: Promise<void> }
  >();
  #reclaimTimer: NodeJS.Timeout | null = null;
  readonly #ctx: DeliveryContext;
  readonly #owner: HeldRowsOwner;

  constructor(ctx: DeliveryContext, owner: HeldRowsOwner) {
    this.#ctx = ctx;
    this.#owner = owner;
  }

  /** Rate-limited rows waiting for their send time. */
  get timedCount(): number {
    return this.#timed.size;
  }

  /** Settles when every timer now set has fired (or been cleared). */
  timedSettled(): Promise<void>[] {
    return [...this.#timed.values()].map((t) => t.promise);
  }

  /** Holds rate-limited rows until their send time, then hands them to the slots. */
  holdUntilDue(rows: readonly ClaimedRow[], now: Date, realNow: number): void {
    const { slots } = this.#owner;
    const groups = new Map<number, ClaimedRow[]>();
    for (const row of rows) {
      const due = realNow + (new Date(row.send_at as Date).getTime() - now.getTime());
      this.dueAt.set(row, due);
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
          this.#timed.delete(timer);
          // Its receiver may have asked for a pause meanwhile.
          const now = this.#ctx.clock.now();
          const held = group.filter((row) => this.pausedHere(row.endpoint_id, now));
          for (const row of held) this.putOff([row.id], new Date(this.paused.get(row.endpoint_id) as number));
          slots.enqueue(held.length === 0 ? group : group.filter((row) => !held.includes(row)));
          this.#owner.dispatch();
          done();
        },
        Math.max(0, at - performance.now()),
      );
      this.#timed.set(timer, { rows: group, done, promise });
    }
    if (!this.#reclaimTimer && !this.#owner.stopping()) {
      this.#reclaimTimer = setTimeout(() => {
        this.#reclaimTimer = null;
        this.#owner.pump();
      }, RATE_RECLAIM_MS);
      this.#reclaimTimer.unref();
    }
  }

  /**
   * Moves the lease of rows this worker holds: null gives them back to the queue at once, a time
   * keeps them from every worker until then. Written in the background; a failure leaves the
   * lease to expire.
   */
  setLease(ids: readonly string[], lockedUntil: Date | null, what: string): void {
    if (ids.length === 0) return;
    const task = this.#ctx.db
      .updateTable('webhook_deliveries')
      .set(lockedUntil ? { locked_until: lockedUntil } : { locked_by: null, locked_until: null })
      .where('id', 'in', ids)
      .where('locked_by', '=', this.#owner.workerId)
      .execute()
      .then(
        () => {},
        (err: unknown) => this.#ctx.log.warn({ err }, `${what} failed; their leases will expire`),
      )
      .finally(() => this.writing.delete(task));
    this.writing.add(task);
  }

  /** Gives claimed rows back to the queue at once (their lease ends). */
  giveBack(ids: readonly string[]): void {
    this.#owner.gaveBack(ids.length);
    this.setLease(ids, null, 'giving back late deliveries');
  }

  pausedHere(targetId: string, now: Date): boolean {
    const until = this.paused.get(targetId);
    if (until === undefined) return false;
    if (until > now.getTime()) return true;
    this.paused.delete(targetId);
    return false;
  }

  /**
   * Rows claimed for a paused target are not sent: their lease is moved to the pause's end, so
   * that no worker claims them before then (and they use none of their attempts meanwhile). A
   * lease ends once it is past (locked_until < now) and a pause at its end: one millisecond less.
   */
  putOff(ids: readonly string[], until: Date): void {
    this.setLease(ids, new Date(until.getTime() - 1), 'putting off paused deliveries');
  }

  /** Stops the reclaim timer (the worker is stopping). */
  stopReclaiming(): void {
    if (this.#reclaimTimer) clearTimeout(this.#reclaimTimer);
  }

  /** Clears every send-time timer and answers the ids of the rows they held (to give back). */
  takeTimed(): string[] {
    const ids: string[] = [];
    for (const [timer, group] of this.#timed) {
      clearTimeout(timer);
      ids.push(...group.rows.map((row) => row.id));
      group.done();
    }
    this.#timed.clear();
    return ids;
  }
}
