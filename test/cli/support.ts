import { type ChildProcess, spawn } from 'node:child_process';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

/** A `waybill` command run as a child process, as a developer or an operator runs it. */
export interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

export function waybill(args: string[], env: Record<string, string>): Run {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', WAYBILL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk) => {
    out += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    err += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** Resolves with the first match of `pattern` in the process's output, or fails when it exits first. */
export function waitFor(run: Run, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(run.stdout());
      if (match) {
        run.child.stdout?.off('data', check);
        resolve(match);
      }
    };
    run.child.stdout?.on('data', check);
    run.exited.then((code) => reject(new Error(`exited ${code}: ${run.stdout()}\n${run.stderr()}`)));
    check();
  });
}
