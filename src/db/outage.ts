// Whether a failure is the database being away, or a passing conflict (answered 503 and retried),
// or a refused statement.
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  '57P01', // admin_shutdown: "terminating connection due to administrator command"
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now: starting up or shutting down
  '53300', // too_many_connections
  // deadlock_detected: the statement was cancelled and undone; trying again is safe (on Citus,
  // concurrent writes to a reference table can meet a deadlock across nodes).
  '40P01',
]);
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Connection ended|not queryable|Cannot use a pool after calling end/i;

/**
 * Whether an error means the database cannot be reached now (an outage, a restart, a failover),
 * as opposed to a statement it refused: the first is answered 503 and retried, the second is a bug
 * or bad data.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth++) {
    const code = String((current as { code?: unknown }).code ?? '');
    if (UNAVAILABLE_CODES.has(code) || code.startsWith('08')) return true;
    const message = String((current as { message?: unknown }).message ?? '');
    if (UNAVAILABLE_MESSAGES.test(message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Whether the database cancelled the statement to break a deadlock (SQLSTATE 40P01): undone, so
 * the work may run again. On Citus, concurrent writes to a reference table (eight refreshes of one
 * token at once) can meet one across nodes.
 */
export function isDeadlock(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth++) {
    if ((current as { code?: unknown }).code === '40P01') return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}
