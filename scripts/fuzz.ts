#!/usr/bin/env node
// The bad-input fuzzer of test/http/fuzz.test.ts, for long runs:
//   npm run fuzz -- --requests 100000 --seed 7
// On the embedded engine by default; on PostgreSQL with WAYBILL_TEST_ENGINE=postgres and
// WAYBILL_TEST_DATABASE_URL set. Prints the count of each status, and every request that got a
// 5xx (or an error out of format); exits 1 if there was one.
import { parseArgs } from 'node:util';
import { describeFailure, type FuzzResult, runFuzz } from '../test/support/fuzz/fuzzer.ts';
import { dropTestSchemas, engine, startWaybill } from '../test/support/harness.ts';
import { setup as buildPgliteTemplate } from '../test/support/pglite-template.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    seed: { type: 'string', default: String(Date.now() % 1_000_000) },
    'refresh-every': { type: 'string', default: '1000' },
  },
});
const requests = Number(values.requests);
const seed = Number(values.seed);
if (!Number.isInteger(requests) || requests < 1 || !Number.isInteger(seed)) {
  console.error('usage: npm run fuzz -- --requests N --seed N');
  process.exit(2);
}

const statusLine = (result: FuzzResult) =>
  [...result.statuses]
    .sort(([a], [b]) => a - b)
    .map(([status, count]) => `${status}: ${count}`)
    .join('  ');

if (engine === 'pglite') await buildPgliteTemplate();
const w = await startWaybill();
const started = performance.now();
console.log(`fuzzing ${requests} requests, seed ${seed}, engine ${engine}`);
let result: FuzzResult;
try {
  result = await runFuzz(w, {
    seed,
    requests,
    refreshEvery: Number(values['refresh-every']),
    onProgress: (done, so) => console.log(`${done} requests  ${statusLine(so)}`),
  });
} finally {
  await w.close();
  if (engine === 'postgres') await dropTestSchemas(process.env.WAYBILL_TEST_DATABASE_URL as string);
}
const seconds = (performance.now() - started) / 1000;
console.log(`\n${result.requests} requests to ${result.targets} routes in ${seconds.toFixed(1)} s`);
console.log(`statuses  ${statusLine(result)}`);
for (const failure of result.failures.slice(0, 50)) console.log(`\n${describeFailure(failure, seed)}`);
if (result.failures.length > 0) {
  console.log(`\n${result.failures.length} failing requests`);
  process.exit(1);
}
console.log('no 5xx, every error in its format');
