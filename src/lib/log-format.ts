/**
 * Log lines for people (issue 40 item 6): on a terminal `npm start` prints "12:04:31.207 INFO
 * request completed GET /v1/me 200 4 ms req-3" instead of pino's JSON. It formats the line pino
 * has already written, so whatever pino's serializers and the database's scrubbing left out
 * (scrubDatabaseError) stays out; JSON remains the format for anything that is not a terminal.
 */
import type { DestinationStream } from 'pino';

const LEVELS: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
/** ANSI colours of the level on a colour terminal: grey, grey, green, yellow, red, red. */
const COLOURS: Record<number, number> = { 10: 90, 20: 90, 30: 32, 40: 33, 50: 31, 60: 31 };
/** Every line has them; the time and level are shown in front, the process's own are noise here. */
const SHOWN_IN_FRONT = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v']);
/** Shown in their own way: the request line, the answer's status and time, the request id. */
const REQUEST_FIELDS = new Set(['req', 'res', 'responseTime', 'reqId', 'err']);

const FIELD_CHARS = 100;

type Entry = Record<string, unknown>;

function clock(time: unknown): string {
  const at = new Date(typeof time === 'number' ? time : Date.now());
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(at.getHours())}:${two(at.getMinutes())}:${two(at.getSeconds())}.${String(at.getMilliseconds()).padStart(3, '0')}`;
}

/** A field as `key=value`, cut short: a line for people is read, not parsed (JSON has it whole). */
function value(field: unknown): string {
  const text =
    typeof field === 'string' && /^[^\s"=]+$/.test(field) ? field : (JSON.stringify(field) ?? String(field));
  if (text.length <= FIELD_CHARS) return text;
  const count = Array.isArray(field) ? ` (${field.length} items)` : '';
  return `${text.slice(0, FIELD_CHARS - 3)}...${count}`;
}

/** One of pino's JSON lines as a line (or, with an error's stack, a few lines) for a person. */
export function prettyLine(json: string, colour = false): string {
  let entry: Entry;
  try {
    entry = JSON.parse(json) as Entry;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = typeof entry.level === 'number' ? entry.level : 30;
  const label = (LEVELS[level] ?? String(level)).padEnd(5);
  const parts = [clock(entry.time), colour ? `\u001b[${COLOURS[level] ?? 0}m${label}\u001b[0m` : label];
  if (entry.msg !== undefined) parts.push(String(entry.msg));
  const req = entry.req as Entry | undefined;
  if (req && typeof req === 'object') parts.push(`${req.method ?? ''} ${req.url ?? ''}`.trim());
  const res = entry.res as Entry | undefined;
  if (res && typeof res === 'object' && res.statusCode !== undefined) parts.push(String(res.statusCode));
  if (typeof entry.responseTime === 'number') parts.push(`${Math.round(entry.responseTime)} ms`);
  for (const [key, field] of Object.entries(entry)) {
    if (SHOWN_IN_FRONT.has(key) || REQUEST_FIELDS.has(key) || field === undefined) continue;
    parts.push(`${key}=${value(field)}`);
  }
  if (entry.reqId !== undefined) parts.push(`(${entry.reqId})`);
  let line = parts.join(' ');
  const err = entry.err as Entry | undefined;
  if (err && typeof err === 'object') {
    const text = typeof err.stack === 'string' ? err.stack : `${err.type ?? 'Error'}: ${err.message ?? ''}`;
    line += `\n${text.replace(/^/gm, '    ')}`;
  }
  return `${line}\n`;
}

/** pino's destination for `pretty`: each line formatted, then written to stdout. */
export function prettyDestination(output: NodeJS.WriteStream = process.stdout): DestinationStream {
  const colour = output.isTTY === true && !process.env.NO_COLOR;
  return { write: (line: string) => void output.write(prettyLine(line, colour)) };
}

/** The format asked for, or, when none is, pretty on a terminal and JSON anywhere else. */
export function logFormatFor(asked: 'json' | 'pretty' | null, output: NodeJS.WriteStream = process.stdout) {
  return asked ?? (output.isTTY ? 'pretty' : 'json');
}
