/**
 * Installs and loads the benchmark's peers (graphile-worker, BullMQ) from bench/peers, a package of
 * their own: the project's lock file never lists them (docs/decisions/0013-benchmark-peers.md).
 * The first run installs them with npm; later runs load what is there when the versions match.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const manifest = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')) as {
  dependencies: Record<string, string>;
};

function installedVersion(name: string): string | null {
  const path = join(here, 'node_modules', name, 'package.json');
  if (!existsSync(path)) return null;
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version;
}

/** Runs npm once when any pinned peer is missing or of another version; its output goes to stderr. */
export function ensurePeersInstalled(): Record<string, string> {
  const stale = Object.entries(manifest.dependencies).filter(
    ([name, version]) => installedVersion(name) !== version,
  );
  if (stale.length > 0) {
    console.error(`installing the benchmark peers into bench/peers (${stale.map(([n]) => n).join(', ')})`);
    execFileSync(
      'npm',
      ['install', '--prefix', here, '--no-audit', '--no-fund', '--no-package-lock', '--loglevel=error'],
      { stdio: ['ignore', 2, 2] },
    );
  }
  return Object.fromEntries(
    Object.keys(manifest.dependencies).map((name) => [name, installedVersion(name) ?? '?']),
  );
}

const peerRequire = createRequire(join(here, 'package.json'));

/** Imports a peer by name from bench/peers/node_modules (not the project's node_modules). */
export async function importPeer<T>(name: string): Promise<T> {
  return (await import(pathToFileURL(peerRequire.resolve(name)).href)) as T;
}

// Only the parts of the peers' APIs the benchmark uses; their own types live in bench/peers, which
// the project's typecheck must not need installed.

export interface GraphileRunner {
  stop(): Promise<void>;
  promise: Promise<void>;
}
export interface GraphileWorkerUtils {
  addJobs(specs: Array<{ identifier: string; payload: unknown }>): Promise<unknown>;
  migrate(): Promise<void>;
  release(): Promise<void>;
}
export interface GraphileWorkerModule {
  run(options: Record<string, unknown>): Promise<GraphileRunner>;
  makeWorkerUtils(options: Record<string, unknown>): Promise<GraphileWorkerUtils>;
  Logger: new (
    factory: (scope: unknown) => (level: string, message: string, meta?: unknown) => void,
  ) => unknown;
}

export interface PgPool {
  query(sql: string, values?: unknown[]): Promise<{ rows: Array<Record<string, unknown>> }>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): void;
  on(event: 'connect', listener: (client: { on(event: 'error', listener: () => void): void }) => void): void;
}
export interface PeerPgModule {
  default: { Pool: new (options: Record<string, unknown>) => PgPool };
}

export interface BullJob {
  data: { id: string; body: string };
}
export interface BullQueue {
  addBulk(jobs: Array<{ name: string; data: unknown; opts?: Record<string, unknown> }>): Promise<unknown>;
  obliterate(options: { force: boolean }): Promise<void>;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
  close(): Promise<void>;
}
export interface BullWorker {
  run(): Promise<void>;
  close(force?: boolean): Promise<void>;
  on(event: 'completed', listener: () => void): void;
  on(event: 'failed' | 'error', listener: (job: unknown, error?: Error) => void): void;
  waitUntilReady(): Promise<unknown>;
}
export interface BullMqModule {
  Queue: new (name: string, options: Record<string, unknown>) => BullQueue;
  Worker: new (
    name: string,
    processor: (job: BullJob) => Promise<void>,
    options: Record<string, unknown>,
  ) => BullWorker;
}

export interface RedisClient {
  info(section: string): Promise<string>;
  config(op: 'GET', key: string): Promise<string[]>;
  scan(cursor: string, ...args: Array<string | number>): Promise<[string, string[]]>;
  del(...keys: string[]): Promise<number>;
  quit(): Promise<unknown>;
}
export interface IoRedisModule {
  Redis: new (options: Record<string, unknown>) => RedisClient;
}
