/**
 * Loaded into the server by `npm run bench:memory` when WAYBILL_BENCH_BREAKDOWN=1
 * (`node --import bench/memory-probe.ts src/main.ts serve`): every 50 ms it reads the process's
 * own account of its memory (process.memoryUsage(), V8's heap statistics), keeps the sample taken
 * at the highest RSS and the highest value of each figure, and on SIGUSR2 (and at exit) appends
 * them to WAYBILL_BENCH_PROBE_FILE as one JSON line, then starts over: one line per phase.
 */
import { appendFileSync } from 'node:fs';
import { getHeapStatistics } from 'node:v8';

const file = process.env.WAYBILL_BENCH_PROBE_FILE;
const MB = 1024 * 1024;

type Sample = Record<string, number>;

function sample(): Sample {
  const usage = process.memoryUsage();
  const heap = getHeapStatistics();
  return {
    rss: usage.rss / MB,
    heapTotal: usage.heapTotal / MB,
    heapUsed: usage.heapUsed / MB,
    external: usage.external / MB,
    arrayBuffers: usage.arrayBuffers / MB,
    mallocedMemory: heap.malloced_memory / MB,
    peakMallocedMemory: heap.peak_malloced_memory / MB,
    heapSizeLimit: heap.heap_size_limit / MB,
  };
}

let atPeak: Sample = sample();
let highest: Sample = { ...atPeak };

function take(): void {
  const now = sample();
  if (now.rss !== undefined && now.rss > (atPeak.rss ?? 0)) atPeak = now;
  for (const [name, value] of Object.entries(now)) highest[name] = Math.max(highest[name] ?? 0, value);
}

function report(): void {
  take();
  if (file) appendFileSync(file, `${JSON.stringify({ atPeak, highest })}\n`);
  atPeak = sample();
  highest = { ...atPeak };
}

if (file) {
  setInterval(take, 50).unref();
  process.on('SIGUSR2', report);
  process.on('exit', report);
}
