#!/usr/bin/env node
/**
 * Memory of `npm start` (`node src/main.ts serve` on the embedded database, demo data included),
 * the server process alone, measured from outside through /proc. Never a test.
 *
 * (f) Its peak RSS (VmHWM) from start to the `Waybill listening on` line, and its RSS after
 *     WAYBILL_BENCH_IDLE_SECONDS (default 15) of idling, on a fresh folder (first start: initdb,
 *     migrations, demo data) and again on the same folder (a restart).
 * (g) A restart under load from the moment it listens: WAYBILL_BENCH_RATE (default 200) events a
 *     second of shipment changes made through its API with the demo's test key (each shipment
 *     created, then moved to delivered: six events in five requests) for WAYBILL_BENCH_LOAD_SECONDS
 *     (default 60), delivered to one endpoint on a receiver at 127.0.0.1 in this process. Printed: the peak RSS
 *     over the process's life (its start included) and during the load alone, the RSS after the
 *     same idling once the load stopped, and how delivery kept up (messages arrived, p50 and p99
 *     from the answer to the request that made an event to its message's arrival).
 *
 * WAYBILL_BENCH_BREAKDOWN=1 adds where the memory is: the server's own account at each phase's
 * peak (bench/memory-probe.ts, loaded with --import: process.memoryUsage() and V8's malloc), and
 * its mappings (/proc/<pid>/smaps, sampled every 250 ms) at the highest RSS, by kind.
 * WAYBILL_BENCH_NODE_FLAGS passes Node or V8 flags to the server, to try a setting without changing it.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  cpuSecondsOf,
  createEndpoint,
  demoKeyOf,
  drained,
  type LoadOutcome,
  MAX_OUTSTANDING,
  percentile,
  shipmentChanges,
  startShipmentReceiver,
  startWaybill,
  stopWaybill,
  type Waybill,
} from './shipment-load.ts';

const IDLE_SECONDS = Number(process.env.WAYBILL_BENCH_IDLE_SECONDS ?? 15);
const LOAD_SECONDS = Number(process.env.WAYBILL_BENCH_LOAD_SECONDS ?? 60);
const RATE = Number(process.env.WAYBILL_BENCH_RATE ?? 200);
const BREAKDOWN = process.env.WAYBILL_BENCH_BREAKDOWN === '1';
/** Node or V8 flags for the server, to try settings without changing it (space-separated). */
const NODE_FLAGS = (process.env.WAYBILL_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
/** Beside this file, so that a checkout's server can be measured by another's bench (run from its folder). */
const PROBE = fileURLToPath(new URL('./memory-probe.ts', import.meta.url));
const PEAK_TARGET_MB = 800;
const IDLE_TARGET_MB = 400;
/** How long the messages of the last events may take to arrive once the load stops. */
const DRAIN_TIMEOUT_MS = 120_000;

function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

/** Starts the peak (VmHWM) over from the RSS of now (proc(5), clear_refs). */
function resetPeak(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

const loadAverageNow = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(', ');

/** The peak RSS of the server's child processes (initdb's, on a first start), sampled every 10 ms. */
function watchChildren(pid: number): { stop(): number } {
  let peak = 0;
  const sample = () => {
    try {
      for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
        .split(' ')
        .filter(Boolean)) {
        peak = Math.max(peak, memoryOf(Number(child)).peak);
      }
    } catch {
      // the server or its child exited between the two reads
    }
  };
  const timer = setInterval(sample, 10);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

type Kinds = Record<string, number>;

/**
 * The process's resident memory by kind of mapping. WebAssembly memories are the read-write
 * mappings followed by a guard region of gigabytes; V8 puts its heap pages at random addresses
 * below glibc's mappings, which start near 0x7f0000000000 (malloc's arenas and large blocks, where
 * the compilers' zones are too).
 */
function mappingsOf(pid: number): Kinds {
  const kinds: Kinds = {};
  let previous: { kind: string; rss: number; end: bigint } | null = null;
  let current: { start: bigint; end: bigint; perms: string; name: string } | null = null;
  const add = (kind: string, mb: number) => {
    kinds[kind] = (kinds[kind] ?? 0) + mb;
  };
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header) {
      current = {
        start: BigInt(`0x${header[1]}`),
        end: BigInt(`0x${header[2]}`),
        perms: header[3] as string,
        name: header[4] as string,
      };
      // A guard of gigabytes right after a read-write mapping: that was a WebAssembly memory.
      if (
        (previous?.kind === 'malloc' || previous?.kind === 'v8 heap') &&
        previous.end === current.start &&
        current.perms === '---p' &&
        current.end - current.start >= 4n << 30n
      ) {
        add(previous.kind, -previous.rss);
        add('wasm memory', previous.rss);
      }
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss || !current) continue;
    const mb = Number(rss[1]) / 1024;
    let kind: string;
    if (current.name.startsWith('/')) kind = 'files';
    else if (current.name === '[heap]') kind = 'malloc';
    else if (current.name !== '') kind = 'other';
    else if (current.perms.includes('x')) kind = 'code';
    else if (current.start >= 0x7f0000000000n) kind = 'malloc';
    else kind = 'v8 heap';
    add(kind, mb);
    previous = { kind, rss: mb, end: current.end };
  }
  return kinds;
}

function watchMappings(pid: number): { stop(): Kinds | null } {
  let highest: Kinds | null = null;
  let highestTotal = 0;
  const timer = setInterval(() => {
    try {
      const kinds = mappingsOf(pid);
      const total = Object.values(kinds).reduce((sum, mb) => sum + mb, 0);
      if (total > highestTotal) [highest, highestTotal] = [kinds, total];
    } catch {
      // exited
    }
  }, 250);
  return {
    stop() {
      clearInterval(timer);
      return highest;
    },
  };
}

interface Measured extends Waybill {
  /** The peak RSS of its child processes while it started (initdb's, on a first start). */
  children: number;
  probeFile: string;
}

/** `npm start` on the folder, its children watched from the spawn, its probe loaded if asked. */
async function start(folder: string, round: string): Promise<Measured> {
  const probeFile = join(folder, `probe-${round}.jsonl`);
  let children: { stop(): number } | null = null;
  const waybill = await startWaybill({
    database: join(folder, 'pglite'),
    nodeFlags: [...NODE_FLAGS, ...(BREAKDOWN ? ['--import', PROBE] : [])],
    env: { WAYBILL_BENCH_PROBE_FILE: probeFile },
    onSpawn: (pid) => {
      children = watchChildren(pid);
    },
  });
  return { ...waybill, children: (children as { stop(): number } | null)?.stop() ?? 0, probeFile };
}

/** Marks the end of a phase for the probe (its line holds that phase's figures). */
function endPhase(waybill: Waybill): void {
  if (BREAKDOWN) waybill.child.kill('SIGUSR2');
}

async function idle(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
}

/** Samples the RSS every 50 ms: its highest value and when it came (seconds after the start). */
function watchRss(pid: number): { stop(): { highest: number; at: number } } {
  const started = performance.now();
  let highest = 0;
  let at = 0;
  const timer = setInterval(() => {
    try {
      const { rss } = memoryOf(pid);
      if (rss > highest) [highest, at] = [rss, (performance.now() - started) / 1000];
    } catch {
      // exited
    }
  }, 50);
  return {
    stop() {
      clearInterval(timer);
      return { highest, at };
    },
  };
}

interface StartFigures {
  peak: number;
  idle: number;
  seconds: number;
  children: number;
}

async function measureStart(waybill: Measured): Promise<StartFigures> {
  const atReady = memoryOf(waybill.pid);
  endPhase(waybill);
  await idle();
  const after = memoryOf(waybill.pid);
  endPhase(waybill);
  return {
    peak: Math.max(atReady.peak, after.peak),
    idle: after.rss,
    seconds: waybill.listeningAfter,
    children: waybill.children,
  };
}

interface LoadFigures {
  /** The server's CPU (user and system) from the load's start until its last message arrived. */
  cpuSeconds: number;
  lifePeak: number;
  loadPeak: number;
  sampledPeak: { highest: number; at: number };
  idle: number;
  outcome: LoadOutcome;
  arrived: number;
  drainSeconds: number;
  p50: number;
  p99: number;
  mappings: Kinds | null;
  loadAverage: string;
}

async function measureLoad(waybill: Waybill, key: string): Promise<LoadFigures> {
  endPhase(waybill);
  const receiver = await startShipmentReceiver();
  try {
    await createEndpoint(waybill.url, key, receiver.url);
    const lifeBefore = memoryOf(waybill.pid).peak;
    resetPeak(waybill.pid);
    const sampled = watchRss(waybill.pid);
    const mappings = BREAKDOWN ? watchMappings(waybill.pid) : null;
    const cpuBefore = cpuSecondsOf(waybill.pid);
    const outcome = await shipmentChanges(waybill, key, RATE, LOAD_SECONDS, `memory-${process.pid}`);
    const drainSeconds = await drained(outcome, receiver.arrivals, DRAIN_TIMEOUT_MS);
    const cpuSeconds = cpuSecondsOf(waybill.pid) - cpuBefore;
    const loadAverage = loadAverageNow();
    const loadPeak = memoryOf(waybill.pid).peak;
    const sampledPeak = sampled.stop();
    const highestMappings = mappings?.stop() ?? null;
    endPhase(waybill);
    const latencies: number[] = [];
    for (const [event, made] of outcome.made) {
      const arrivedAt = receiver.arrivals.get(event);
      if (arrivedAt !== undefined) latencies.push(arrivedAt - made.at);
    }
    latencies.sort((a, b) => a - b);
    await idle();
    const after = memoryOf(waybill.pid);
    endPhase(waybill);
    return {
      lifePeak: Math.max(lifeBefore, loadPeak, after.peak),
      loadPeak: Math.max(loadPeak, after.peak),
      sampledPeak,
      idle: after.rss,
      outcome,
      arrived: latencies.length,
      drainSeconds,
      cpuSeconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      mappings: highestMappings,
      loadAverage,
    };
  } finally {
    receiver.server.closeAllConnections();
    receiver.server.close();
  }
}

const verdict = (mb: number, target: number) =>
  `${mb.toFixed(0)} MB (target < ${target}: ${mb < target ? 'met' : 'NOT met'})`;

function startLine(label: string, m: StartFigures, loadAverage: string): string {
  return (
    `[pglite] (f) npm start, ${label}: peak RSS ${verdict(m.peak, PEAK_TARGET_MB)}, idle RSS after ${IDLE_SECONDS} s ${verdict(m.idle, IDLE_TARGET_MB)}, listening after ${m.seconds.toFixed(1)} s; the server process alone` +
    (m.children > 0
      ? ` (its initdb child, which exits before the server opens the folder: peak RSS ${m.children.toFixed(0)} MB)`
      : '') +
    `; load average ${loadAverage}`
  );
}

function probeLines(file: string, phases: string[]): string[] {
  let lines: string[];
  try {
    lines = readFileSync(file, 'utf8').trim().split('\n');
  } catch {
    return [];
  }
  const figure = (sample: Record<string, number>, name: string) =>
    `${name} ${(sample[name] ?? 0).toFixed(0)}`;
  return lines.slice(0, phases.length).map((line, index) => {
    const { atPeak, highest } = JSON.parse(line) as {
      atPeak: Record<string, number>;
      highest: Record<string, number>;
    };
    const at = ['rss', 'heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'mallocedMemory']
      .map((name) => figure(atPeak, name))
      .join(', ');
    const top = ['heapTotal', 'heapUsed', 'external', 'arrayBuffers', 'mallocedMemory', 'peakMallocedMemory']
      .map((name) => figure(highest, name))
      .join(', ');
    return `[pglite]     ${phases[index]}: at its highest RSS (MB) ${at}; highest of each ${top}`;
  });
}

const folder = mkdtempSync(join(tmpdir(), 'waybill-memory-'));
try {
  const firstStart = await start(folder, 'first');
  const key = demoKeyOf(firstStart.banner);
  if (!key) throw new Error(`the demo printed no test API key:\n${firstStart.banner}`);
  const first = await measureStart(firstStart);
  const firstLoad = loadAverageNow();
  await stopWaybill(firstStart);

  const restart = await start(folder, 'restart');
  const again = await measureStart(restart);
  const againLoad = loadAverageNow();
  await stopWaybill(restart);

  // Loaded from the moment it listens, as when a service comes back to a queue of work.
  const busy = await start(folder, 'loaded');
  const loaded = await measureLoad(busy, key);
  await stopWaybill(busy);

  console.log(startLine('first start on a fresh folder', first, firstLoad));
  if (BREAKDOWN) for (const line of probeLines(firstStart.probeFile, ['start', 'idle'])) console.log(line);
  console.log(startLine('restart on the same folder', again, againLoad));
  if (BREAKDOWN) for (const line of probeLines(restart.probeFile, ['start', 'idle'])) console.log(line);
  const { outcome } = loaded;
  console.log(
    `[pglite] (g) npm start (a restart) under ${RATE} events/s of shipment changes for ${LOAD_SECONDS} s from the moment it listens, one endpoint on a receiver at 127.0.0.1: peak RSS ${verdict(loaded.lifePeak, PEAK_TARGET_MB)} over the process's life, ${loaded.loadPeak.toFixed(0)} MB during the load (sampled: ${loaded.sampledPeak.highest.toFixed(0)} MB, ${loaded.sampledPeak.at.toFixed(0)} s in); idle RSS ${IDLE_SECONDS} s after ${verdict(loaded.idle, IDLE_TARGET_MB)}; load average ${loaded.loadAverage}`,
  );
  console.log(
    `[pglite]     delivery: ${outcome.made.size} events in ${outcome.requests} requests (${outcome.failed} failed, ${outcome.heldBack.toFixed(1)} s held back by ${MAX_OUTSTANDING} unanswered), ${loaded.arrived} messages arrived, the last ${loaded.drainSeconds.toFixed(1)} s after the load stopped; answer-to-arrival p50 ${loaded.p50.toFixed(1)} ms, p99 ${loaded.p99.toFixed(1)} ms; the server's CPU ${((loaded.cpuSeconds / outcome.made.size) * 1e6).toFixed(0)} µs per event`,
  );
  if (BREAKDOWN) {
    for (const line of probeLines(busy.probeFile, ['start', 'load', 'idle after the load']))
      console.log(line);
    if (loaded.mappings)
      console.log(
        `[pglite]     mappings at the highest RSS of the load (MB): ${Object.entries(loaded.mappings)
          .sort(([, a], [, b]) => b - a)
          .map(([kind, mb]) => `${kind} ${mb.toFixed(0)}`)
          .join(', ')}`,
      );
  }
} finally {
  rmSync(folder, { recursive: true, force: true });
}
