import type { Logger } from 'pino';

/**
 * How a long-running `waybill` process (serve, worker) stays up and how it ends. It ends only
 * when asked (SIGTERM, SIGINT: exit 0 once stopped) or on a fault (exit 1, with a log line that
 * says why), never because its sockets happened to close: a database outage closes every one of
 * them, and the engine's timers are unref'd (issue 22).
 */
export interface Lifetime {
  /** Aborted by the first SIGTERM or SIGINT: the process was asked to stop. */
  readonly stopping: AbortSignal;
  /** Aborted by a second signal: an operator who presses Ctrl-C twice means now. */
  readonly hurry: AbortSignal;
  /** What the first signal runs before the process exits 0; set once what it stops exists. */
  onStop(stop: () => Promise<void>): void;
}

/** The longest a timer waits (about 24.8 days); the hold renews itself at that pace. */
const HOLD_MS = 2 ** 31 - 1;

/**
 * Takes the one deliberate handle that keeps the event loop alive until the process exits, and
 * turns every way of ending into an exit code with a log line. `shutdownBoundMs` bounds a stop:
 * past it the process exits 1 instead of hanging.
 */
export function holdProcess(log: Logger, options: { shutdownBoundMs: number }): Lifetime {
  const stopping = new AbortController();
  const hurry = new AbortController();
  let stop: (() => Promise<void>) | null = null;
  const hold = setInterval(() => {}, HOLD_MS);

  function exit(code: number): never {
    clearInterval(hold);
    process.exit(code);
  }

  // Unreachable while the hold is in place: a safety net should a change ever let it go early.
  process.on('beforeExit', () => {
    if (stopping.signal.aborted) exit(0);
    log.fatal('the event loop emptied while the process was not asked to stop; exiting');
    exit(1);
  });
  process.on('uncaughtException', (err) => {
    log.fatal({ err }, 'uncaught exception; exiting');
    exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    log.fatal({ err: reason }, 'unhandled promise rejection; exiting');
    exit(1);
  });

  function onSignal(): void {
    if (stopping.signal.aborted) {
      hurry.abort();
      return;
    }
    stopping.abort();
    setTimeout(() => {
      log.error({ boundMs: options.shutdownBoundMs }, 'the stop did not finish in time; exiting');
      exit(1);
    }, options.shutdownBoundMs).unref();
    (stop ?? (async () => {}))().then(
      () => exit(0),
      (err: unknown) => {
        log.error({ err }, 'the stop failed; exiting');
        exit(1);
      },
    );
  }
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);

  return {
    stopping: stopping.signal,
    hurry: hurry.signal,
    onStop(given) {
      stop = given;
    },
  };
}

/** Waits for `promise` at most `ms`; says whether it settled in time (its failure counts as settled). */
export async function within(ms: number, promise: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
