/**
 * Runs the calls that arrive while earlier ones are with the database together, as one batch: a
 * group commit. A call that finds the group idle goes at once, alone; under load, callers share
 * statements (and their round trips and commits) instead of queueing for connections.
 *
 * One batch runs at a time, so that under load every batch is as large as it can be: fewer
 * statements, fewer round trips, less CPU on both sides per call (issue 10: a second lane always
 * open halved the batches and cost a third more CPU per token request). A batch that stays with the
 * database longer than `stallMs` (a lock wait, a slow disk) lets the calls behind it go beside it,
 * up to `lanes` batches at once; the extra lane closes once the others move again.
 */
export class CallGroups<In, Out> {
  readonly #run: (inputs: In[]) => Promise<Out[]>;
  readonly #lanes: number;
  readonly #max: number;
  readonly #stallMs: number;
  readonly #now: () => number;
  #waiting: { input: In; resolve: (out: Out) => void; reject: (err: unknown) => void }[] = [];
  /** The running lanes: when each one's current batch started (null between two batches). */
  #running = new Set<{ since: number | null }>();
  #stallTimer: NodeJS.Timeout | null = null;

  /**
   * `run` answers each input in order; batches of at most `max`; one batch at a time, and up to
   * `lanes` while the running ones are stalled. `now` is a monotonic clock in milliseconds.
   */
  constructor(
    run: (inputs: In[]) => Promise<Out[]>,
    options: { lanes: number; max: number; stallMs: number; now?: () => number },
  ) {
    this.#run = run;
    this.#lanes = options.lanes;
    this.#max = options.max;
    this.#stallMs = options.stallMs;
    this.#now = options.now ?? (() => performance.now());
  }

  call(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ input, resolve, reject });
      if (this.#running.size === 0) void this.#lane();
      else this.#watchForStall();
    });
  }

  /** Whether every running lane has had its batch with the database for `stallMs` or more. */
  #allStalled(except?: { since: number | null }): boolean {
    const now = this.#now();
    for (const lane of this.#running) {
      if (lane === except) continue;
      if (lane.since === null || now - lane.since < this.#stallMs) return false;
    }
    return true;
  }

  /** Opens another lane for the waiting calls once the running batches have stalled. */
  #watchForStall(): void {
    if (this.#stallTimer || this.#running.size >= this.#lanes) return;
    const oldest = Math.min(...[...this.#running].map((lane) => lane.since ?? this.#now()));
    const wait = Math.max(0, oldest + this.#stallMs - this.#now());
    this.#stallTimer = setTimeout(() => {
      this.#stallTimer = null;
      if (this.#waiting.length === 0 || this.#running.size >= this.#lanes) return;
      if (this.#allStalled()) void this.#lane();
      else this.#watchForStall();
    }, wait);
    this.#stallTimer.unref();
  }

  async #lane(): Promise<void> {
    const lane: { since: number | null } = { since: null };
    this.#running.add(lane);
    try {
      // A lane opened beside a stalled one leaves once another moves again: one batch at a time.
      while (this.#waiting.length > 0 && (this.#running.size === 1 || this.#allStalled(lane))) {
        const batch = this.#waiting.splice(0, this.#max);
        lane.since = this.#now();
        try {
          const outs = await this.#run(batch.map((entry) => entry.input));
          for (const [index, entry] of batch.entries()) entry.resolve(outs[index] as Out);
        } catch (err) {
          for (const entry of batch) entry.reject(err);
        } finally {
          lane.since = null;
        }
      }
    } finally {
      this.#running.delete(lane);
      // Calls left waiting by a lane that stepped aside belong to the lanes still running; if none is.
      if (this.#waiting.length > 0 && this.#running.size === 0) void this.#lane();
      else if (this.#waiting.length > 0) this.#watchForStall();
    }
  }
}
