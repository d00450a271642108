/** Polls (real time, briefly) until the check passes: the engine runs on its own. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> {
  const until = Date.now() + 15_000;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Polls until the check passes (a check that throws has not passed yet), in real time: for what
 * happens outside the injected clock (sockets reconnecting, processes and database nodes stopping
 * and starting).
 */
export async function until(
  check: () => Promise<unknown> | unknown,
  timeoutMs: number,
  what = 'the check',
  pollMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (
    !(await Promise.resolve()
      .then(check)
      .catch(() => false))
  ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
