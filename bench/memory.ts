#!/usr/bin/env node
/**
 * Memory of `npm start` (`node src/main.ts serve` on the embedded database, demo data included),
 * the server process alone: its peak RSS (VmHWM) from start to the `Waybill listening on` line,
 * and its RSS after WAYBILL_BENCH_IDLE_SECONDS (default 15) of idling, on a fresh folder (first
 * start: initdb, migrations, demo data) and again on the same folder (a restart). Never a test.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/support/harness.ts';

const IDLE_SECONDS = Number(process.env.WAYBILL_BENCH_IDLE_SECONDS ?? 15);

function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}

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

async function start(
  folder: string,
): Promise<{ peak: number; idle: number; seconds: number; children: number }> {
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, ['src/main.ts', 'serve'], {
    env: {
      ...process.env,
      PORT: String(port),
      WAYBILL_DATABASE_URL: join(folder, 'pglite'),
      WAYBILL_DEMO: '1',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const children = watchChildren(child.pid as number);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Waybill listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${output}`)));
  });
  const seconds = (performance.now() - started) / 1000;
  const childrenPeak = children.stop();
  const atReady = memoryOf(child.pid as number);
  await new Promise((resolve) => setTimeout(resolve, IDLE_SECONDS * 1000));
  const idle = memoryOf(child.pid as number);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  return { peak: Math.max(atReady.peak, idle.peak), idle: idle.rss, seconds, children: childrenPeak };
}

const folder = mkdtempSync(join(tmpdir(), 'waybill-memory-'));
try {
  const first = await start(folder);
  const again = await start(folder);
  const line = (label: string, m: { peak: number; idle: number; seconds: number; children: number }) =>
    console.log(
      `[pglite] (f) npm start, ${label}: peak RSS ${m.peak.toFixed(0)} MB (target < 800), idle RSS after ${IDLE_SECONDS} s ${m.idle.toFixed(0)} MB (target < 400), listening after ${m.seconds.toFixed(1)} s; the server process alone` +
        (m.children > 0
          ? ` (its initdb child, which exits before the server opens the folder: peak RSS ${m.children.toFixed(0)} MB)`
          : ''),
    );
  line('first start on a fresh folder', first);
  line('restart on the same folder', again);
} finally {
  rmSync(folder, { recursive: true, force: true });
}
