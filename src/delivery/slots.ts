import type { ClaimedRow } from './claim.ts';

export interface SlotLimits {
  /** Requests in flight in this process. */
  maxInFlight: number;
  /** Requests in flight to a target at first, and to any target that answers slowly. */
  perTarget: number;
  /** Rounds of a target's requests held ahead (in flight and queued), each within the lease. */
  rounds: number;
}

/** An answer within this earns its target one more slot, up to maxInFlight. */
const FAST_MS = 500;
/** An attempt this long (or a timeout) halves its target's slots, down to MIN_PER_TARGET. */
const SLOW_MS = 2_000;
const MIN_PER_TARGET = 2;
/** Above this many remembered targets, the idle ones are forgotten (they start again at perTarget). */
const REMEMBERED_TARGETS = 10_000;

interface TargetState {
  inFlight: number;
  queued: ClaimedRow[];
  /** Requests this target may have in flight now (additive increase, multiplicative decrease). */
  limit: number;
}

/**
 * The worker's slots and its queue of claimed rows: how many requests are in flight, in all and per
 * target, and which claimed rows wait for a slot. Targets take turns, so one busy target cannot
 * starve the others. A target's share adapts to how it answers: one that answers fast earns more
 * slots (a single busy endpoint can use the whole worker), one that answers slowly or not at all
 * keeps few, so it cannot hold the slots the others need. A target's queue is bounded by its
 * share, so its rows are sent inside their lease.
 */
export class SendSlots {
  readonly limits: SlotLimits;
  #inFlight = 0;
  #queuedCount = 0;
  readonly #targets = new Map<string, TargetState>();

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

  /** Rows a target not seen yet may take in one claim. */
  get heldForNewTarget(): number {
    return this.limits.perTarget * this.limits.rounds;
  }

  #state(targetId: string): TargetState {
    let state = this.#targets.get(targetId);
    if (!state) {
      state = { inFlight: 0, queued: [], limit: this.limits.perTarget };
      this.#targets.set(targetId, state);
    }
    return state;
  }

  /** Room left per target with something held here (the claim takes no more than that). */
  room(): Map<string, number> {
    const map = new Map<string, number>();
    for (const [targetId, state] of this.#targets) {
      if (state.inFlight === 0 && state.queued.length === 0) continue;
      map.set(targetId, state.limit * this.limits.rounds - state.inFlight - state.queued.length);
    }
    return map;
  }

  /** Whether the target's queue runs low: time to claim more for it. */
  runningLow(targetId: string): boolean {
    const state = this.#targets.get(targetId);
    return !state || state.queued.length < state.limit;
  }

  enqueue(rows: readonly ClaimedRow[]): void {
    for (const row of rows) this.#state(row.endpoint_id).queued.push(row);
    this.#queuedCount += rows.length;
  }

  /** Takes the rows that may start now, one target at a time in turn, and counts them in flight. */
  takeStartable(): ClaimedRow[] {
    const started: ClaimedRow[] = [];
    let progress = true;
    while (progress && this.#inFlight < this.limits.maxInFlight) {
      progress = false;
      for (const state of this.#targets.values()) {
        if (this.#inFlight >= this.limits.maxInFlight) break;
        if (state.inFlight >= state.limit) continue;
        const row = state.queued.shift();
        if (!row) continue;
        this.#queuedCount -= 1;
        this.#inFlight += 1;
        state.inFlight += 1;
        started.push(row);
        progress = true;
      }
    }
    return started;
  }

  /** A send ended: its slot is free, and how long it took adjusts its target's share. */
  finished(targetId: string, durationMs: number, timedOut: boolean): void {
    this.#inFlight -= 1;
    const state = this.#state(targetId);
    state.inFlight -= 1;
    if (timedOut || durationMs >= SLOW_MS)
      state.limit = Math.max(MIN_PER_TARGET, Math.floor(state.limit / 2));
    else if (durationMs < FAST_MS) state.limit = Math.min(this.limits.maxInFlight, state.limit + 1);
    if (this.#targets.size > REMEMBERED_TARGETS) this.#forgetIdle();
  }

  #forgetIdle(): void {
    for (const [targetId, state] of this.#targets) {
      if (state.inFlight === 0 && state.queued.length === 0) this.#targets.delete(targetId);
    }
  }

  /**
   * Drops what waits for a target (it answered 410: recording cancels those deliveries; or it asked
   * for a pause) and answers the ids dropped.
   */
  dropQueue(targetId: string): string[] {
    const state = this.#targets.get(targetId);
    if (!state) return [];
    const ids = state.queued.map((row) => row.id);
    this.#queuedCount -= state.queued.length;
    state.queued = [];
    return ids;
  }

  /** Empties the queue and answers the ids of what was in it (to give the claims back). */
  drainQueued(): string[] {
    const ids: string[] = [];
    for (const state of this.#targets.values()) {
      ids.push(...state.queued.map((row) => row.id));
      state.queued = [];
    }
    this.#queuedCount = 0;
    return ids;
  }
}
