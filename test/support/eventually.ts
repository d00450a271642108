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
