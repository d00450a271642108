/**
 * The frames of a `waybill listen` connection (JSON text frames over a WebSocket; decision 0012).
 * Waybill sends `message`; the command answers each with `result` once its local receiver answered.
 */
import type { SendError } from '../../delivery/sender.ts';

/** A message to forward: the headers and body exactly as an HTTP endpoint would get them. */
export interface MessageFrame {
  type: 'message';
  /** Names this send; the result carries it back. */
  id: string;
  headers: Record<string, string>;
  body: string;
}

/** What the local receiver answered, or why it did not. */
export interface ResultFrame {
  type: 'result';
  id: string;
  status_code: number | null;
  error: Extract<SendError, 'timeout' | 'connection_failed'> | null;
  duration_ms: number;
  /** The first 4 KB of the answer, base64. */
  body: string | null;
}

/** Sent once on connecting: which listener this is. */
export interface ReadyFrame {
  type: 'ready';
  listener_id: string;
  event_types: string[];
}

const RESULT_ERRORS = new Set(['timeout', 'connection_failed']);
const ID = /^[A-Za-z0-9]{1,64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** 4 KB of base64. */
const MAX_BODY_CHARS = 5464;

/** A result frame from the command, or null for anything else (never trusted beyond its shape). */
export function parseResult(text: string): ResultFrame | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const frame = value as Record<string, unknown>;
  const { id, status_code: status, error, duration_ms: duration, body } = frame;
  if (frame.type !== 'result' || typeof id !== 'string' || !ID.test(id)) return null;
  const statusOk =
    status === null || (Number.isInteger(status) && (status as number) >= 100 && (status as number) <= 599);
  const errorOk = error === null || (typeof error === 'string' && RESULT_ERRORS.has(error));
  const durationOk = typeof duration === 'number' && Number.isFinite(duration) && duration >= 0;
  const bodyOk =
    body === null || (typeof body === 'string' && body.length <= MAX_BODY_CHARS && BASE64.test(body));
  if (!statusOk || !errorOk || !durationOk || !bodyOk || (status === null) === (error === null)) return null;
  return frame as unknown as ResultFrame;
}
