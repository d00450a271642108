import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waybill } from './support.ts';

/**
 * Node runs the compiled code it finds in the compile cache, so the folder must be one only
 * Waybill's user can write (issue 30 item 5): the real `waybill` command, as a child process, with
 * its own home and temporary folders.
 */
describe("the waybill command's compile cache", { timeout: 60_000 }, () => {
  const made: string[] = [];
  afterEach(() => {
    for (const folder of made.splice(0)) rmSync(folder, { recursive: true, force: true });
  });
  function folders() {
    const root = mkdtempSync(join(tmpdir(), 'waybill-cache-'));
    made.push(root);
    const home = join(root, 'home');
    const tmp = join(root, 'tmp');
    mkdirSync(home);
    mkdirSync(tmp);
    return { home, tmp, cache: join(home, '.cache', 'waybill', 'node-compile-cache') };
  }
  async function run(env: Record<string, string>) {
    const command = waybill(['listen', '--help'], env);
    expect(await command.exited, command.stderr()).toBe(0);
  }

  it("lives in the user's cache folder, 0700, never in the shared temporary folder", async () => {
    const { home, tmp, cache } = folders();
    await run({ HOME: home, TMPDIR: tmp });
    expect(existsSync(join(tmp, 'node-compile-cache'))).toBe(false);
    expect(statSync(cache).mode & 0o777).toBe(0o700);
    // Node wrote the compiled code there.
    expect(readdirSync(cache).length).toBeGreaterThan(0);
  });

  it('takes XDG_CACHE_HOME, and closes a folder others could write', async () => {
    const { home, tmp } = folders();
    const xdg = join(home, 'xdg');
    const cache = join(xdg, 'waybill', 'node-compile-cache');
    mkdirSync(cache, { recursive: true });
    chmodSync(cache, 0o777);
    await run({ HOME: home, TMPDIR: tmp, XDG_CACHE_HOME: xdg });
    expect(statSync(cache).mode & 0o777).toBe(0o700);
    expect(readdirSync(cache).length).toBeGreaterThan(0);
    expect(existsSync(join(tmp, 'node-compile-cache'))).toBe(false);
  });

  it('uses no cache rather than a folder that is a link', async () => {
    const { home, tmp, cache } = folders();
    const elsewhere = join(tmp, 'planted');
    mkdirSync(elsewhere);
    mkdirSync(join(home, '.cache', 'waybill'), { recursive: true });
    symlinkSync(elsewhere, cache);
    await run({ HOME: home, TMPDIR: tmp });
    expect(readdirSync(elsewhere)).toEqual([]);
    expect(existsSync(join(tmp, 'node-compile-cache'))).toBe(false);
  });

  it('NODE_COMPILE_CACHE still chooses the folder', async () => {
    const { home, tmp } = folders();
    const chosen = join(home, 'chosen');
    await run({ HOME: home, TMPDIR: tmp, NODE_COMPILE_CACHE: chosen });
    expect(readdirSync(chosen).length).toBeGreaterThan(0);
  });
});
