import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, renameSync, rmdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

/**
 * PGlite's memory (issue 10, `npm start` under 400 MB idle): PostgreSQL's defaults are sized for a
 * server of its own (128 MB of shared buffers, in the WebAssembly memory here, which never shrinks).
 * One process with one connection needs far less.
 */
export const PGLITE_OPTIONS = {
  startParams: [
    ...PGlite.defaultStartParams,
    '-c',
    'shared_buffers=16MB',
    '-c',
    'work_mem=4MB',
    '-c',
    'maintenance_work_mem=16MB',
  ],
};

const INITDB_SCRIPT = fileURLToPath(new URL('./pglite-initdb.ts', import.meta.url));

/** Whether a data folder already holds a cluster (every cluster has a PG_VERSION file). */
function holdsCluster(dataDir: string): boolean {
  return existsSync(join(dataDir, 'PG_VERSION'));
}

/** The line of a child's stderr that names its error (a stack trace's first line), if any. */
function firstError(stderr: string): string | undefined {
  const lines = stderr.split('\n').map((line) => line.trim());
  return lines.find((line) => /^[A-Za-z]*Error\b/.test(line)) ?? lines.findLast((line) => line !== '');
}

function buildPrefix(dataDir: string): string {
  return `.${basename(dataDir)}.initdb-`;
}

/** A cluster half built by a process that was killed during its first start is of no use to anyone. */
function removeAbandonedBuilds(dataDir: string, parent: string): void {
  const prefix = buildPrefix(dataDir);
  for (const name of readdirSync(parent)) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number.parseInt(name.slice(prefix.length), 10);
    if (!isRunning(pid)) rmSync(join(parent, name), { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Creates the cluster of a new data folder in a short-lived child process, in WebAssembly's
 * baseline tier (`--liftoff-only`). In this process, initdb's hot functions would be handed to
 * V8's optimising compiler, and one of them (104 KB of WebAssembly, hot from PostgreSQL's first
 * seconds) takes about 600 MB of compiler memory, on top of initdb's own: a first `npm start`
 * peaked at 1.2 GB. In the child, initdb peaks at 550 to 620 MB, runs faster (nothing competes
 * for the two cores with the compiler), and its memory is returned when it exits, before this
 * process opens the folder as on any restart.
 *
 * The child builds the cluster beside the folder and renames it into place, so a child killed
 * halfway leaves no half-made cluster behind. If the child cannot do it, returns why, and the
 * caller's PGlite runs initdb itself, as it always could.
 */
export async function initializeInChild(
  dataDir: string,
): Promise<'present' | 'created' | { failed: string }> {
  if (holdsCluster(dataDir)) return 'present';
  if (existsSync(dataDir) && readdirSync(dataDir).length > 0)
    return { failed: 'the folder is not empty and holds no cluster' };
  const parent = dirname(dataDir);
  // PGlite makes the folder but not its parents.
  mkdirSync(parent, { recursive: true });
  removeAbandonedBuilds(dataDir, parent);
  const building = join(parent, `${buildPrefix(dataDir)}${process.pid}-${randomBytes(4).toString('hex')}`);
  const child = spawn(process.execPath, ['--liftoff-only', INITDB_SCRIPT, building], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => {
    child.once('error', () => resolve(null));
    child.once('exit', (exitCode) => resolve(exitCode));
  });
  try {
    if (code !== 0 || !holdsCluster(building))
      throw new Error(firstError(stderr) ?? `initdb child exited with ${code}`);
    // Another process may have made the folder's cluster meanwhile: never put ours over it.
    if (holdsCluster(dataDir)) {
      rmSync(building, { recursive: true, force: true });
      return 'present';
    }
    // Empty (checked above); rmdir refuses, rather than deletes, anything that appeared since.
    if (existsSync(dataDir)) rmdirSync(dataDir);
    renameSync(building, dataDir);
    return 'created';
  } catch (error) {
    rmSync(building, { recursive: true, force: true });
    return { failed: (error as Error).message };
  }
}
