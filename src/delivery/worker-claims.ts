import { type ClaimedRow, claimDue } from './claim.ts';
import type { DeliveryContext } from './context.ts';
import type { QueueStatistics } from './queue-statistics.ts';
import type { SendSlots } from './slots.ts';
import type { HeldRows } from './worker-timers.ts';
import type { WorkerCounts } from './worker-types.ts';

/** The sizes a worker claims by (worker.ts chooses them for the engine). */
export interface ClaimSizes {
  batchSize: number;
  maxHeld: number;
  minClaim: number;
  leaseMs: number;
}

/** What a claim round needs of its worker. */
export interface ClaimOwner {
  workerId: string;
  slots: SendSlots;
  held: HeldRows;
  counts: WorkerCounts;
  statistics: QueueStatistics;
  targets?: () => readonly string[];
  stopping(): boolean;
  dispatch(): void;
}

/**
 * The worker's claims (claim.ts does the statement): rounds over the targets, in turn, each claim
 * as large as the room the slots have, until every target with room has been claimed for.
 */
export class ClaimRounds {
  /** Where the next claim's walk over the targets starts (claim.ts): targets take turns. */
  #cursor = '';
  /** Targets whose last claim took all the room they had: they may have more due. */
  readonly capped = new Set<string>();
  readonly #ctx: DeliveryContext;
  readonly #owner: ClaimOwner;
  readonly #sizes: ClaimSizes;

  constructor(ctx: DeliveryContext, owner: ClaimOwner, sizes: ClaimSizes) {
    this.#ctx = ctx;
    this.#owner = owner;
    this.#sizes = sizes;
  }

  /** After a claim: which targets it took all it could for (their room, or the claim's limit). */
  #noteCapped(rows: readonly ClaimedRow[], room: ReadonlyMap<string, number>, limit: number): void {
    const { capped } = this;
    const taken = new Map<string, number>();
    for (const row of rows) taken.set(row.endpoint_id, (taken.get(row.endpoint_id) ?? 0) + 1);
    // The claim serves targets in turn: when its limit cut it short, only the last one served may
    // have been cut. (Marking every target of a full claim made each send to 64 targets with one
    // row each start a claim that came back empty: issue 25.)
    const cut = rows.length >= limit ? rows.at(-1)?.endpoint_id : undefined;
    for (const [targetId, count] of taken) {
      if (targetId === cut || count >= (room.get(targetId) ?? this.#owner.slots.heldForNewTarget))
        capped.add(targetId);
      else capped.delete(targetId);
    }
    // Bounded: a target left out is claimed for by the next wake-up or poll.
    if (capped.size > 10_000) capped.clear();
  }

  /** One round of claims; answers the rows claimed. */
  async round(): Promise<number> {
    const ctx = this.#ctx;
    const { slots, held, counts } = this.#owner;
    const { batchSize, maxHeld, minClaim, leaseMs } = this.#sizes;
    let total = 0;
    // Where a run of claims that each took all there was where they went began, and whether it
    // has gone past the last target since: once round, the round is over.
    let coverFrom: string | null = null;
    let wrapped = false;
    while (!this.#owner.stopping() && slots.held < maxHeld) {
      // Claims come in batches: a claim for a row or two as each send ends costs a statement
      // per delivery (on PGlite, where statements queue behind each other, ten times slower).
      if (slots.held > 0 && maxHeld - slots.held < minClaim) break;
      const targets = this.#owner.targets?.();
      if (targets?.length === 0) break;
      const now = ctx.clock.now();
      const limit = Math.min(batchSize, maxHeld - slots.held);
      const from = this.#cursor;
      const room = slots.room();
      const claimedAtReal = performance.now();
      const { rows, next, walkedTo } = await claimDue(
        ctx.db,
        {
          ...(targets ? { targets } : {}),
          workerId: this.#owner.workerId,
          now,
          leaseUntil: new Date(now.getTime() + leaseMs),
          limit,
          perEndpoint: slots.heldForNewTarget,
          room,
          after: from,
        },
        ctx.database.distributed,
      );
      this.#cursor = next;
      counts.claims += 1;
      counts.claimedRows += rows.length;
      if (rows.length === 0) counts.emptyClaims += 1;
      this.#noteCapped(rows, room, limit);
      for (const row of rows) if (row.in_line) held.leaseEndsAt.set(row, claimedAtReal + leaseMs);
      if (held.paused.size === 0 && !rows.some((row) => row.send_at)) slots.enqueue(rows);
      else {
        const heldBack = new Map<string, string[]>();
        const sendable: ClaimedRow[] = [];
        const limited: ClaimedRow[] = [];
        for (const row of rows) {
          if (held.pausedHere(row.endpoint_id, now))
            heldBack.set(row.endpoint_id, [...(heldBack.get(row.endpoint_id) ?? []), row.id]);
          else if (row.send_at) limited.push(row);
          else sendable.push(row);
        }
        for (const [targetId, ids] of heldBack)
          held.putOff(ids, new Date(held.paused.get(targetId) as number));
        slots.enqueue(sendable);
        if (limited.length > 0) held.holdUntilDue(limited, now, claimedAtReal);
      }
      this.#owner.dispatch();
      // A claim that came back well filled: there is a backlog, and the plan must be the right one.
      if (rows.length >= Math.min(limit, 16)) this.#owner.statistics.backlogSeen();
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
    return total;
  }
}
