/**
 * What Waybill reads from a company's broker over one connection between two confirmed messages
 * (findings M1 and M2). A broker answers a message with an acknowledgement of a few dozen bytes, a
 * returned message carries one of ours back (at most 1 MB), and heartbeats are tiny: a server that
 * sends more than this without confirming anything is hostile or broken, and its link is closed.
 */
export const MAX_READ_BYTES_BETWEEN_CONFIRMS = 4 * 1024 * 1024;

/** Counts bytes read from one link; `spend` answers false once the budget is gone. */
export class ReadBudget {
  #read = 0;
  readonly #limit: number;

  constructor(limit = MAX_READ_BYTES_BETWEEN_CONFIRMS) {
    this.#limit = limit;
  }

  spend(bytes: number): boolean {
    this.#read += bytes;
    return this.#read <= this.#limit;
  }

  /** A confirmed message: what the broker sent so far was an answer. */
  refill(): void {
    this.#read = 0;
  }
}
