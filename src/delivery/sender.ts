import type { Readable } from 'node:stream';
import { Agent, buildConnector, request } from 'undici';
import type { DeliveryContext } from './context.ts';
import { checkConnection, GuardRefusal } from './guard.ts';
import type { SendError } from './tables.ts';

export type { SendError };

export interface SendResult {
  status_code: number | null;
  /** The first bytes of the answer as received (at most RESPONSE_LIMIT): any bytes, NUL included. */
  response_head: Buffer | null;
  duration_ms: number;
  error: SendError | null;
  /** The Retry-After of a 429 or 503 answer, as received (schedule.ts `pauseOf` reads it). */
  retry_after?: string | null;
}

export interface OutgoingMessage {
  url: string;
  headers: Record<string, string>;
  body: string;
  /** The names among `headers` that are the endpoint's custom headers. */
  custom?: readonly string[];
}

/** Takes a message to a target and answers what came back; never throws. */
export type Transport = (
  targetId: string,
  message: OutgoingMessage,
  deadlineMs: number,
) => Promise<SendResult>;

/** A target that no connection reaches (a listener whose command is away): nothing was sent. */
export function notConnected(durationMs: number): SendResult {
  return { status_code: null, response_head: null, duration_ms: durationMs, error: 'connection_failed' };
}

/**
 * The transport of `waybill listen` targets in this process (modules/listeners registers it): a
 * replay or test send of a listener goes over its connection, never over HTTP.
 */
const listenerTransports = new WeakMap<object, Transport>();
export function setListenerTransport(ctx: DeliveryContext, transport: Transport): void {
  listenerTransports.set(ctx, transport);
}
export function listenerTransport(ctx: DeliveryContext): Transport {
  return listenerTransports.get(ctx) ?? (async () => notConnected(0));
}

/** Spec 6.3 and 8: only the first 4 KB of an answer are read; one 10 s deadline per attempt. */
export const RESPONSE_LIMIT = 4096;
export const DEADLINE_MS = 10_000;

export interface SenderOptions {
  /** The deadline from connect to the last byte read (tests shorten it). */
  deadlineMs?: number;
  /** Keep-alive connections per origin. */
  connectionsPerOrigin?: number;
  /** Extra certificate authorities to trust (tests serving https on loopback); the system's otherwise. */
  ca?: string;
}

/**
 * An undici dispatcher whose connector resolves the name itself, checks every address with the
 * guard, and connects to a checked address (the name kept for TLS SNI and certificate checks):
 * a name that later resolves to a refused address cannot be reached by a second lookup.
 */
export function guardedAgent(ctx: DeliveryContext, options: SenderOptions = {}): Agent {
  const deadline = options.deadlineMs ?? DEADLINE_MS;
  const base = buildConnector({ timeout: deadline, ...(options.ca ? { ca: options.ca } : {}) });
  return new Agent({
    connections: options.connectionsPerOrigin ?? 16,
    keepAliveTimeout: 30_000,
    headersTimeout: deadline,
    bodyTimeout: deadline,
    connect(opts, callback) {
      // The guard's address and port policy, at every connection (decision 0010).
      checkConnection(ctx, opts).then(
        (addresses) => {
          const hostname = opts.hostname.replace(/^\[|\]$/g, '');
          base(
            { ...opts, hostname: addresses[0] as string, servername: opts.servername || hostname },
            callback,
          );
        },
        (error: unknown) => callback(error as Error, null),
      );
    },
  } as ConstructorParameters<typeof Agent>[0]);
}

const TLS_CODES =
  /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|HOSTNAME_MISMATCH|EPROTO|ERR_OSSL)/;
const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
  'ABORT_ERR',
]);

/** Maps whatever a failed request threw to one of our codes. */
export function errorCode(error: unknown, timedOut: boolean): SendError {
  if (timedOut) return 'timeout';
  let current: unknown = error;
  for (let depth = 0; current && depth < 4; depth++) {
    if (current instanceof GuardRefusal) return current.kind === 'dns' ? 'dns_failed' : 'address_not_allowed';
    const code = String((current as { code?: unknown }).code ?? '');
    if (TIMEOUT_CODES.has(code)) return 'timeout';
    if (TLS_CODES.test(code)) return 'tls_failed';
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_failed';
    current = (current as { cause?: unknown }).cause;
  }
  return 'connection_failed';
}

/**
 * Reads at most RESPONSE_LIMIT bytes, then drops the connection rather than download the rest. A
 * body that stops short of it (it never ends, or the connection breaks) keeps what arrived: the
 * status line is the answer, the body is only logged.
 */
export function readHead(body: Readable): Promise<Buffer> {
  // Events rather than an async iterator: one iterator per answer was 3% of a worker's CPU.
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      body.off('data', onData);
      // Destroying a body read to its end is a no-op; one cut short closes its socket.
      body.destroy();
      const head = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      resolve(head.subarray(0, RESPONSE_LIMIT));
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= RESPONSE_LIMIT) finish();
    };
    body.on('data', onData);
    body.once('end', finish);
    // Cut short by the deadline or the peer: what arrived is what is logged. The listener stays,
    // so that an error after the end is never unhandled.
    body.on('error', finish);
    body.once('close', finish);
    // Already over before we listened: its events will not come again.
    if (body.destroyed || body.readableEnded) finish();
  });
}

/** One POST: never follows a redirect, never asks for compression, never waits past the deadline. */
export async function sendMessage(
  agent: Agent,
  message: OutgoingMessage,
  options: SenderOptions = {},
): Promise<SendResult> {
  const deadline = options.deadlineMs ?? DEADLINE_MS;
  const started = performance.now();
  // An app with no events URL yet: nothing to connect to; retried by the schedule meanwhile.
  if (!message.url)
    return { status_code: null, response_head: null, duration_ms: 0, error: 'connection_failed' };
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, deadline);
  try {
    const response = await request(message.url, {
      method: 'POST',
      headers: message.headers,
      body: message.body,
      dispatcher: agent,
      signal: controller.signal,
    });
    const head = await readHead(response.body);
    const retryAfter = response.headers['retry-after'];
    return {
      status_code: response.statusCode,
      response_head: head,
      duration_ms: Math.round(performance.now() - started),
      error: null,
      ...((response.statusCode === 429 || response.statusCode === 503) && retryAfter !== undefined
        ? { retry_after: Array.isArray(retryAfter) ? (retryAfter[0] ?? null) : retryAfter }
        : {}),
    };
  } catch (error) {
    return {
      status_code: null,
      response_head: null,
      duration_ms: Math.round(performance.now() - started),
      error: errorCode(error, timedOut),
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The answer's head as text for people and JSON: UTF-8, with U+FFFD where the bytes are not. */
export function responseText(head: Uint8Array | null): string | null {
  return head === null ? null : Buffer.from(head.buffer, head.byteOffset, head.byteLength).toString('utf8');
}

/**
 * A 2xx answer, or a broker's confirmation: a broker attempt has no status code, and no error
 * when the broker took the message (destinations/); an HTTP attempt without an answer always has one.
 */
export function isSuccess(result: SendResult): boolean {
  if (result.error !== null) return false;
  return result.status_code === null || (result.status_code >= 200 && result.status_code < 300);
}
