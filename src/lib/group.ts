/**
 * Runs the calls that arrive while earlier ones are with the database together, as one batch: a
 * group commit. A call that finds a free lane goes at once, alone; under load, callers share
 * statements (and their round trips and commits) instead of queueing for connections.
 */
export class CallGroups<In, Out> {
  readonly #run: (inputs: In[]) => Promise<Out[]>;
  readonly #lanes: number;
  readonly #max: number;
  #waiting: { input: In; resolve: (out: Out) => void; reject: (err: unknown) => void }[] = [];
  #busy = 0;

  /** `run` answers each input in order; at most `lanes` batches run at once, of at most `max`. */
  constructor(run: (inputs: In[]) => Promise<Out[]>, options: { lanes: number; max: number }) {
    this.#run = run;
    this.#lanes = options.lanes;
    this.#max = options.max;
  }

  call(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ input, resolve, reject });
      if (this.#busy < this.#lanes) void this.#lane();
    });
  }

  async #lane(): Promise<void> {
    this.#busy += 1;
    try {
      while (this.#waiting.length > 0) {
        const batch = this.#waiting.splice(0, this.#max);
        try {
          const outs = await this.#run(batch.map((entry) => entry.input));
          for (const [index, entry] of batch.entries()) entry.resolve(outs[index] as Out);
        } catch (err) {
          for (const entry of batch) entry.reject(err);
        }
      }
    } finally {
      this.#busy -= 1;
    }
  }
}
