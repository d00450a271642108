import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeFailure, runFuzz } from '../support/fuzz/fuzzer.ts';
import { startWaybill, type TestWaybill } from '../support/harness.ts';

// A few thousand requests in `npm test`; `npm run fuzz -- --requests 100000 --seed N` runs more.
const SEED = Number(process.env.WAYBILL_FUZZ_SEED ?? 20261121);
const REQUESTS = Number(process.env.WAYBILL_FUZZ_REQUESTS ?? 3000);

let w: TestWaybill;

beforeAll(async () => {
  w = await startWaybill();
});
afterAll(async () => {
  await w?.close();
});

describe('bad input, generated from the OpenAPI document and the route table', () => {
  it(`never gets a 5xx, and errors keep their format (${REQUESTS} requests, seed ${SEED})`, async () => {
    const result = await runFuzz(w, { seed: SEED, requests: REQUESTS });
    expect(result.failures.map((failure) => describeFailure(failure, SEED))).toEqual([]);
    // Every operation, OAuth endpoint and page is a target...
    expect(result.targets).toBeGreaterThan(100);
    // ...and enough requests pass the checks to reach the services, not only the validators.
    const succeeded = [...result.statuses].filter(([status]) => status < 400).reduce((n, [, c]) => n + c, 0);
    expect(succeeded / result.requests).toBeGreaterThan(0.1);
  }, 600_000);
});
