import { describe, expect, it } from 'vitest';
import { CallGroups } from '../../src/lib/group.ts';

/** The grouping under the token endpoint's happy path (spendAndIssueGrouped), driven directly. */
describe('call groups', () => {
  function recording(lanes: number, max: number, fail?: (inputs: number[]) => boolean) {
    const batches: number[][] = [];
    const groups = new CallGroups<number, number>(
      async (inputs) => {
        batches.push(inputs);
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (fail?.(inputs)) throw new Error('statement failed');
        return inputs.map((n) => n * 10);
      },
      { lanes, max },
    );
    return { batches, groups };
  }

  it('sends the first call at once and the calls that arrive meanwhile together, each answered with its own', async () => {
    const { batches, groups } = recording(1, 64);
    const answers = await Promise.all([1, 2, 3, 4, 5].map((n) => groups.call(n)));
    expect(answers).toEqual([10, 20, 30, 40, 50]);
    expect(batches).toEqual([[1], [2, 3, 4, 5]]);
    // Idle again: the next call goes alone, at once.
    expect(await groups.call(6)).toBe(60);
    expect(batches.at(-1)).toEqual([6]);
  });

  it('runs up to its lanes at once and no group above its size', async () => {
    const { batches, groups } = recording(2, 2);
    await Promise.all([1, 2, 3, 4, 5, 6].map((n) => groups.call(n)));
    expect(batches).toEqual([[1], [2], [3, 4], [5, 6]]);
  });

  it('fails the calls of a failed group only', async () => {
    const { groups } = recording(1, 64, (inputs) => inputs.includes(3));
    const settled = await Promise.allSettled([1, 2, 3, 4].map((n) => groups.call(n)));
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'rejected']);
    expect(await groups.call(5)).toBe(50);
  });
});
