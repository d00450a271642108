import { chmodSync, lstatSync, mkdirSync } from 'node:fs';
import { enableCompileCache } from 'node:module';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/**
 * Where Node keeps the compiled code of the `waybill` command (issue 30 item 5): the user's cache
 * folder (`$XDG_CACHE_HOME/waybill/node-compile-cache`, else `~/.cache/...`), created 0700, never
 * the system's shared temporary folder: Node runs the code it finds there, so whoever can write it
 * runs code as Waybill's user. `NODE_COMPILE_CACHE` still chooses another folder (the operator's
 * choice), `NODE_DISABLE_COMPILE_CACHE=1` turns it off. Null when no folder is safe to use.
 */
export function compileCacheFolder(env: NodeJS.ProcessEnv = process.env): string | null {
  const xdg = env.XDG_CACHE_HOME;
  let home: string;
  try {
    home = env.HOME || homedir();
  } catch {
    return null;
  }
  const base = xdg && isAbsolute(xdg) ? xdg : home && isAbsolute(home) ? join(home, '.cache') : null;
  if (!base) return null;
  const folder = join(base, 'waybill', 'node-compile-cache');
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const stat = lstatSync(folder);
    // Ours, a real folder (not a link someone left there), writable by nobody else.
    if (!stat.isDirectory() || (typeof process.getuid === 'function' && stat.uid !== process.getuid()))
      return null;
    if ((stat.mode & 0o077) !== 0) chmodSync(folder, 0o700);
    return folder;
  } catch {
    return null;
  }
}

/** Turns the compile cache on in its folder, unless the environment says otherwise. */
export function enableWaybillCompileCache(env: NodeJS.ProcessEnv = process.env): void {
  if (env.NODE_DISABLE_COMPILE_CACHE) return;
  if (env.NODE_COMPILE_CACHE) {
    enableCompileCache();
    return;
  }
  const folder = compileCacheFolder(env);
  // No safe folder: no cache (it only saves time), rather than the shared temporary folder.
  if (folder) enableCompileCache(folder);
}
