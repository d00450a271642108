import { afterEach, describe, expect, it, vi } from 'vitest';
import { CallGroups } from '../../src/lib/group.ts';

/** The grouping under the token endpoint's happy path (spendAndIssueGrouped), driven directly. */
describe('call groups', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  /**
   * Each batch stays "with the database" until the test lets it go (`finish`), so that what runs
   * beside what is decided by the test, not by timing.
   */
  function controlled(options: { lanes: number; max: number; stallMs?: number }) {
    const batches: number[][] = [];
    const pending: { inputs: number[]; finish: (fail?: boolean) => void }[] = [];
    const groups = new CallGroups<number, number>(
      (inputs) =>
        new Promise((resolve, reject) => {
          batches.push(inputs);
          pending.push({
            inputs,
            finish: (fail) =>
              fail ? reject(new Error('statement failed')) : resolve(inputs.map((n) => n * 10)),
          });
        }),
      { stallMs: 1_000, now: () => Date.now(), ...options },
    );
    /** Lets the oldest unfinished batch answer, then lets the lanes take their next step. */
    const finishNext = async (fail = false) => {
      pending.shift()?.finish(fail);
      await vi.advanceTimersByTimeAsync(0);
    };
    return { batches, groups, finishNext, pending };
  }

  it('sends the first call at once and the calls that arrive meanwhile together, each answered with its own', async () => {
    vi.useFakeTimers();
    const { batches, groups, finishNext } = controlled({ lanes: 2, max: 64 });
    const answers = Promise.all([1, 2, 3, 4, 5].map((n) => groups.call(n)));
    await vi.advanceTimersByTimeAsync(0);
    // One batch at a time while nothing stalls, though a second lane is allowed.
    expect(batches).toEqual([[1]]);
    await finishNext();
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
    await finishNext();
    expect(await answers).toEqual([10, 20, 30, 40, 50]);
    // Idle again: the next call goes alone, at once.
    const sixth = groups.call(6);
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.at(-1)).toEqual([6]);
    await finishNext();
    expect(await sixth).toBe(60);
  });

  it('makes no batch above its size', async () => {
    vi.useFakeTimers();
    const { batches, groups, finishNext } = controlled({ lanes: 1, max: 2 });
    const all = Promise.all([1, 2, 3, 4, 5, 6].map((n) => groups.call(n)));
    for (let i = 0; i < 4; i++) await finishNext();
    expect(batches).toEqual([[1], [2, 3], [4, 5], [6]]);
    expect(await all).toEqual([10, 20, 30, 40, 50, 60]);
  });

  it('lets the calls behind a stalled batch go beside it, up to its lanes, and closes the extra lane after', async () => {
    vi.useFakeTimers();
    const { batches, groups, pending } = controlled({ lanes: 2, max: 64, stallMs: 25 });
    const first = groups.call(1);
    await vi.advanceTimersByTimeAsync(0);
    const waiting = Promise.all([2, 3].map((n) => groups.call(n)));
    await vi.advanceTimersByTimeAsync(24);
    expect(batches).toEqual([[1]]);
    // Batch [1] has been with the database for 25 ms: [2, 3] go beside it.
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([[1], [2, 3]]);
    pending[1]?.finish();
    expect(await waiting).toEqual([20, 30]);
    // Still only two at once, however long both stall.
    const more = Promise.all([4, 5].map((n) => groups.call(n)));
    await vi.advanceTimersByTimeAsync(100);
    expect(batches).toEqual([[1], [2, 3], [4, 5]]);
    pending[0]?.finish();
    pending[2]?.finish();
    expect(await first).toBe(10);
    expect(await more).toEqual([40, 50]);
    // Nothing stalls now: back to one batch at a time.
    const later = Promise.all([6, 7, 8].map((n) => groups.call(n)));
    await vi.advanceTimersByTimeAsync(10);
    expect(batches.slice(3)).toEqual([[6]]);
    pending[3]?.finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(batches.slice(3)).toEqual([[6], [7, 8]]);
    pending[4]?.finish();
    expect(await later).toEqual([60, 70, 80]);
  });

  it('fails the calls of a failed batch only', async () => {
    vi.useFakeTimers();
    const { groups, finishNext } = controlled({ lanes: 1, max: 64 });
    const settled = Promise.allSettled([1, 2, 3, 4].map((n) => groups.call(n)));
    await finishNext();
    await finishNext(true);
    expect((await settled).map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected']);
    const fifth = groups.call(5);
    await finishNext();
    expect(await fifth).toBe(50);
  });
});
