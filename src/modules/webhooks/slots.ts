import type { ClaimedRow } from './claim.ts';

export interface SlotLimits {
  /** Requests in flight in this process. */
  maxInFlight: number;
  /** Requests in flight to one target, so that a slow receiver cannot take every slot. */
  perTarget: number;
  /** Rows held (in flight and queued) per target: what one claim may take ahead for it. */
  heldPerTarget: number;
}

/**
 * The worker's slots and its queue of claimed rows: how many requests are in flight, in all and per
 * target, and which claimed rows wait for a slot. Targets take turns, so one busy target cannot
 * starve the others; a target's queue is bounded, so its rows are sent inside their lease.
 */
export class SendSlots {
  readonly limits: SlotLimits;
  #inFlight = 0;
  readonly #byTarget = new Map<string, number>();
  readonly #queued = new Map<string, ClaimedRow[]>();
  #queuedCount = 0;

  constructor(limits: SlotLimits) {
    this.limits = limits;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Rows held in all: in flight and waiting. */
  get held(): number {
    return this.#inFlight + this.#queuedCount;
  }

  /** Room left per target with something held here (the claim takes no more than that). */
  room(): Map<string, number> {
    const map = new Map<string, number>();
    for (const targetId of new Set([...this.#byTarget.keys(), ...this.#queued.keys()])) {
      map.set(targetId, this.limits.heldPerTarget - this.heldFor(targetId));
    }
    return map;
  }

  heldFor(targetId: string): number {
    return (this.#byTarget.get(targetId) ?? 0) + this.queuedFor(targetId);
  }

  queuedFor(targetId: string): number {
    return this.#queued.get(targetId)?.length ?? 0;
  }

  enqueue(rows: readonly ClaimedRow[]): void {
    for (const row of rows) {
      const list = this.#queued.get(row.endpoint_id) ?? [];
      list.push(row);
      this.#queued.set(row.endpoint_id, list);
    }
    this.#queuedCount += rows.length;
  }

  /** Takes the rows that may start now, one target at a time in turn, and counts them in flight. */
  takeStartable(): ClaimedRow[] {
    const started: ClaimedRow[] = [];
    let progress = true;
    while (progress && this.#inFlight < this.limits.maxInFlight) {
      progress = false;
      for (const [targetId, rows] of this.#queued) {
        if (this.#inFlight >= this.limits.maxInFlight) break;
        if ((this.#byTarget.get(targetId) ?? 0) >= this.limits.perTarget) continue;
        const row = rows.shift();
        if (!row) continue;
        this.#queuedCount -= 1;
        if (rows.length === 0) this.#queued.delete(targetId);
        this.#inFlight += 1;
        this.#byTarget.set(targetId, (this.#byTarget.get(targetId) ?? 0) + 1);
        started.push(row);
        progress = true;
      }
    }
    return started;
  }

  /** A send ended: its slot is free. */
  finished(targetId: string): void {
    this.#inFlight -= 1;
    const left = (this.#byTarget.get(targetId) ?? 1) - 1;
    if (left === 0) this.#byTarget.delete(targetId);
    else this.#byTarget.set(targetId, left);
  }

  /** Drops what waits for a target (it answered 410: recording cancels those deliveries). */
  dropQueue(targetId: string): void {
    this.#queuedCount -= this.queuedFor(targetId);
    this.#queued.delete(targetId);
  }

  /** Empties the queue and answers the ids of what was in it (to give the claims back). */
  drainQueued(): string[] {
    const ids = [...this.#queued.values()].flat().map((row) => row.id);
    this.#queued.clear();
    this.#queuedCount = 0;
    return ids;
  }
}
