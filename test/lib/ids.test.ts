import { afterEach, describe, expect, it, vi } from 'vitest';
import { newId } from '../../src/lib/ids.ts';

describe('ids', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sort by creation time, a millisecond apart or years apart, and stay unguessable within one', () => {
    vi.useFakeTimers();
    const made: string[] = [];
    for (const time of [Date.UTC(2026, 10, 25, 12), Date.UTC(2026, 10, 25, 12) + 1, Date.UTC(2031, 0, 1)]) {
      vi.setSystemTime(time);
      made.push(newId('dlv'));
    }
    expect([...made].sort()).toEqual(made);
    for (const id of made) expect(id).toMatch(/^dlv_[0-9A-Za-z]{22}$/);

    // Within one millisecond the random part decides: no two alike, in no particular order.
    const sameMillisecond = Array.from({ length: 1000 }, () => newId('att'));
    expect(new Set(sameMillisecond).size).toBe(1000);
    expect(new Set(sameMillisecond.map((id) => id.slice(0, 12))).size).toBe(1);
    expect([...sameMillisecond].sort()).not.toEqual(sameMillisecond);
  });
});
