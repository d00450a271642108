/**
 * What the benchmarks that drive `waybill serve` through its API share (bench:memory,
 * bench:first-seconds, bench:soak): the server started as `npm start` starts it, a receiver that
 * times each shipment event's arrival, shipment changes through the API at a steady rate, and the
 * figures of a window of that load.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { SHIPMENT_EVENT_TYPES } from '../src/modules/webhooks/event-types.ts';
import { freePort } from '../test/support/harness.ts';

export interface Receiver {
  url: string;
  server: Server;
  /** Arrival time of each event's message, by `type shipment-id status`. */
  arrivals: Map<string, number>;
  received: { count: number };
}

export async function startShipmentReceiver(): Promise<Receiver> {
  const arrivals = new Map<string, number>();
  const received = { count: 0 };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.now();
      received.count++;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          type: string;
          data: { status: string; shipment: { id: string } };
        };
        arrivals.set(`${body.type} ${body.data.shipment.id} ${body.data.status}`, at);
      } catch {
        // not a shipment event: counted, not timed
      }
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    server,
    arrivals,
    received,
  };
}

/** A shipment's life through the API: the status it is moved to at each step, and its events. */
export const STEPS: { status: string; events: string[] }[] = [
  { status: 'confirmed', events: ['shipment.created'] },
  { status: 'picked_up', events: ['shipment.status_changed'] },
  { status: 'in_transit', events: ['shipment.status_changed'] },
  { status: 'out_for_delivery', events: ['shipment.status_changed'] },
  { status: 'delivered', events: ['shipment.status_changed', 'shipment.delivered'] },
];

/** A process's CPU so far, user and system, in seconds (proc(5): fields 14 and 15, in clock ticks). */
export function cpuSecondsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A process's resident memory now, MB (0 once it has exited). */
export function rssOf(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? Number.NaN;
}

export interface Waybill {
  child: ChildProcess;
  pid: number;
  url: string;
  /** What the server printed up to the listening line (the demo's sign-ins and test key). */
  banner: string;
  /** Spawn to the listening line, seconds. */
  listeningAfter: number;
}

export interface StartOptions {
  /** The checkout's `src/main.ts` to run (another checkout's, to compare versions). */
  main?: string;
  /** A folder (the embedded engine) or a postgres:// URL. */
  database: string;
  nodeFlags?: string[];
  /** A file to append the server's output to. */
  output?: string;
  env?: Record<string, string>;
  /** Told the server's pid as soon as it is spawned (to watch its start). */
  onSpawn?: (pid: number) => void;
  /**
   * Output awaited besides the listening line: on PostgreSQL the server listens before it
   * migrates, and prints the demo's sign-ins after.
   */
  awaiting?: RegExp;
}

const THIS_MAIN = fileURLToPath(new URL('../src/main.ts', import.meta.url));

/** `waybill serve` with the demo, as `npm start` runs it, until it prints its listening line. */
export async function startWaybill(options: StartOptions): Promise<Waybill> {
  const main = options.main ?? THIS_MAIN;
  const port = await freePort();
  const started = performance.now();
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), main, 'serve'], {
    cwd: join(dirname(main), '..'),
    env: {
      ...process.env,
      PORT: String(port),
      WAYBILL_DATABASE_URL: options.database,
      WAYBILL_DEMO: '1',
      // The receiver is on this machine: development's exception in the URL guard.
      WAYBILL_WEBHOOK_ALLOW_PRIVATE: '127.0.0.0/8',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  options.onSpawn?.(child.pid as number);
  let banner = '';
  await new Promise<void>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      banner += chunk.toString();
      if (banner.includes('Waybill listening on') && (options.awaiting?.test(banner) ?? true)) {
        // From now on its output (a log line per request) is read and dropped.
        child.stdout?.off('data', read);
        child.stdout?.resume();
        resolve();
      }
    };
    child.stdout?.on('data', read);
    if (options.output) child.stdout?.pipe(createWriteStream(options.output, { flags: 'a' }));
    child.once('exit', (code) => reject(new Error(`server exited with ${code}:\n${banner}`)));
  });
  return {
    child,
    pid: child.pid as number,
    url: `http://127.0.0.1:${port}`,
    banner,
    listeningAfter: (performance.now() - started) / 1000,
  };
}

export async function stopWaybill(waybill: Waybill): Promise<void> {
  if (waybill.child.exitCode !== null) return;
  const exited = new Promise((resolve) => waybill.child.once('exit', resolve));
  waybill.child.kill('SIGTERM');
  await exited;
}

/** The demo's test API key, from the banner of a first start. */
export function demoKeyOf(banner: string): string | undefined {
  return /test API key\s+(sk_test_\S+)/.exec(banner)?.[1];
}

export async function createEndpoint(api: string, key: string, url: string): Promise<void> {
  const response = await request(`${api}/v1/webhook-endpoints`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url, event_types: SHIPMENT_EVENT_TYPES }),
  });
  const text = await response.body.text();
  if (response.statusCode !== 201) throw new Error(`endpoint not created (${response.statusCode}): ${text}`);
}

export interface Made {
  /** When the request that committed the event was answered (performance.now()). */
  at: number;
  /** How long that request took, ms. */
  answerMs: number;
}

/** The server's and this process's CPU (seconds) and the server's RSS (MB), at a second's start. */
export interface Sample {
  server: number;
  bench: number;
  rss: number;
}

export interface LoadOutcome {
  started: number;
  /** One sample at the start of each second of load, and one at its end. */
  samples: Sample[];
  requests: number;
  failed: number;
  /** Failed answers by status and the start of their body. */
  failures: Map<string, number>;
  /** Seconds the generator spent held back by MAX_OUTSTANDING unanswered requests. */
  heldBack: number;
  /** Each event made, by `type shipment-id status` (the receiver's key). */
  made: Map<string, Made>;
}

/** Requests to the server left unanswered at most; beyond it the load generator waits (and says so). */
export const MAX_OUTSTANDING = 256;

/**
 * Shipment changes at `rate` events a second for `seconds`, open loop, through the API: each
 * shipment created, then moved step by step to delivered. `tag` keeps idempotency keys apart
 * between runs on the same data.
 */
export async function shipmentChanges(
  waybill: Pick<Waybill, 'url' | 'pid'>,
  key: string,
  rate: number,
  seconds: number,
  tag: string,
): Promise<LoadOutcome> {
  const agent = new Agent({ connections: 32, keepAliveTimeout: 60_000 });
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const outcome: LoadOutcome = {
    started: 0,
    samples: [],
    requests: 0,
    failed: 0,
    failures: new Map(),
    heldBack: 0,
    made: new Map(),
  };
  const sample = () => {
    const own = process.cpuUsage();
    outcome.samples.push({
      server: cpuSecondsOf(waybill.pid),
      bench: (own.user + own.system) / 1e6,
      rss: rssOf(waybill.pid),
    });
  };
  const ready: { id: string; step: number }[] = [];
  const inFlight = new Set<Promise<void>>();
  let events = 0;
  let sequence = 0;

  const send = async (shipment: { id: string; step: number } | null) => {
    const step = shipment ? shipment.step : 0;
    const { status, events: types } = STEPS[step] as (typeof STEPS)[number];
    const sentAt = performance.now();
    const response = shipment
      ? await request(`${waybill.url}/v1/shipments/${shipment.id}/status`, {
          method: 'POST',
          dispatcher: agent,
          headers,
          body: JSON.stringify({ status }),
        })
      : await request(`${waybill.url}/v1/shipments`, {
          method: 'POST',
          dispatcher: agent,
          headers: { ...headers, 'idempotency-key': `${tag}-${sequence++}` },
          body: JSON.stringify({ recipient_name: 'Bench Recipient', currency: 'EUR', status }),
        });
    const at = performance.now();
    const body = (await response.body.json()) as { id?: string };
    if (response.statusCode >= 300 || !body.id) {
      outcome.failed++;
      const why = `${response.statusCode} ${JSON.stringify(body).slice(0, 120)}`;
      outcome.failures.set(why, (outcome.failures.get(why) ?? 0) + 1);
      return;
    }
    for (const type of types) outcome.made.set(`${type} ${body.id} ${status}`, { at, answerMs: at - sentAt });
    if (step + 1 < STEPS.length) ready.push({ id: body.id, step: step + 1 });
  };

  const started = performance.now();
  outcome.started = started;
  sample();
  let heldSince: number | null = null;
  while (performance.now() - started < seconds * 1000) {
    if (performance.now() - started >= outcome.samples.length * 1000) sample();
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    while (events < due) {
      if (inFlight.size >= MAX_OUTSTANDING) {
        heldSince ??= performance.now();
        break;
      }
      if (heldSince !== null) {
        outcome.heldBack += (performance.now() - heldSince) / 1000;
        heldSince = null;
      }
      const shipment = ready.shift() ?? null;
      events += (STEPS[shipment ? shipment.step : 0] as (typeof STEPS)[number]).events.length;
      outcome.requests++;
      const sending: Promise<void> = send(shipment)
        .catch(() => {
          outcome.failed++;
        })
        .finally(() => inFlight.delete(sending));
      inFlight.add(sending);
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  sample();
  await Promise.all(inFlight);
  await agent.close();
  return outcome;
}

/** Waits until every event made has arrived, or the timeout passes; the seconds it took. */
export async function drained(
  outcome: LoadOutcome,
  arrivals: ReadonlyMap<string, number>,
  timeoutMs: number,
): Promise<number> {
  const from = performance.now();
  const waiting = new Set(outcome.made.keys());
  while (performance.now() - from < timeoutMs) {
    for (const key of waiting) if (arrivals.has(key)) waiting.delete(key);
    if (waiting.size === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return (performance.now() - from) / 1000;
}

/** Commit-to-arrival and API answer times of the events made in [from, to) seconds of the load. */
export interface Window {
  events: number;
  arrived: number;
  p50: number;
  p99: number;
  answerP50: number;
  answerP99: number;
  /** The server's and the bench's share of a core over the window. */
  serverCpu: number;
  benchCpu: number;
  /** The server's RSS at the window's end, MB. */
  rss: number;
}

export function windowOf(
  outcome: LoadOutcome,
  arrivals: ReadonlyMap<string, number>,
  fromSecond: number,
  toSecond: number,
): Window {
  const latencies: number[] = [];
  const answers: number[] = [];
  for (const [key, made] of outcome.made) {
    const second = (made.at - outcome.started) / 1000;
    if (second < fromSecond || second >= toSecond) continue;
    answers.push(made.answerMs);
    const arrived = arrivals.get(key);
    if (arrived !== undefined) latencies.push(arrived - made.at);
  }
  latencies.sort((a, b) => a - b);
  answers.sort((a, b) => a - b);
  const last = outcome.samples.length - 1;
  const from = outcome.samples[Math.min(fromSecond, last)];
  const to = outcome.samples[Math.min(toSecond, last)];
  const span = Math.min(toSecond, last) - Math.min(fromSecond, last);
  return {
    events: answers.length,
    arrived: latencies.length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    answerP50: percentile(answers, 50),
    answerP99: percentile(answers, 99),
    serverCpu: from && to && span > 0 ? (to.server - from.server) / span : Number.NaN,
    benchCpu: from && to && span > 0 ? (to.bench - from.bench) / span : Number.NaN,
    rss: to?.rss ?? Number.NaN,
  };
}
