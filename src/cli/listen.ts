/**
 * `waybill listen`: receive a company's test webhooks on this machine without a tunnel. The
 * command connects out to Waybill (a WebSocket, decision 0012), registers a listener (a temporary
 * test endpoint with its own secret), forwards each message to --forward-to with its original
 * headers, prints one line per message and reports the local answer back, so the delivery log
 * shows the attempt as for any endpoint.
 */
import { parseArgs } from 'node:util';
import { request, WebSocket } from 'undici';
// The engine's own reading of an answer: the first 4 KB, then the connection is dropped.
import { readHead } from '../delivery/sender.ts';
import type { MessageFrame, ResultFrame } from '../modules/listeners/protocol.ts';
import { apiAddressProblem } from './api-address.ts';

export const LISTEN_USAGE = `Usage: waybill listen --api <url> --forward-to <url> [--events a,b]   (key in WAYBILL_API_KEY)

  --api         Waybill's address, e.g. http://localhost:3000 (or WAYBILL_API_URL)
  --forward-to  where to POST each message, e.g. http://localhost:4000/webhooks
  --events      event types to receive (default: the shipment events), comma-separated
  --token       the key, when WAYBILL_API_KEY is not set; prefer the variable: an option
                shows in the process list (ps) to everyone on this machine

The key is a test API key with webhooks:write (live keys are refused), read from the
WAYBILL_API_KEY environment variable, or from --token.`;

/** Under the engine's 10 s deadline, so that the answer gets back in time. */
const FORWARD_DEADLINE_MS = 9_000;
const RECONNECT_MAX_MS = 30_000;

interface Options {
  api: string;
  token: string;
  forwardTo: string;
  events: string[] | undefined;
}

class CommandError extends Error {}

function readOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      api: { type: 'string' },
      token: { type: 'string' },
      'forward-to': { type: 'string' },
      events: { type: 'string' },
    },
  });
  const api = values.api ?? process.env.WAYBILL_API_URL;
  const token = values.token ?? process.env.WAYBILL_API_KEY;
  const forwardTo = values['forward-to'];
  if (!api || !token || !forwardTo) throw new CommandError(LISTEN_USAGE);
  for (const [name, url] of [
    ['--api', api],
    ['--forward-to', forwardTo],
  ] as const) {
    if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
      throw new CommandError(`${name} must be an http:// or https:// URL`);
  }
  // The key goes to --api: plain http only on this machine (--forward-to carries no key of ours).
  const problem = apiAddressProblem(api, '--api');
  if (problem) throw new CommandError(problem);
  const events = values.events
    ?.split(',')
    .map((type) => type.trim())
    .filter(Boolean);
  return { api: api.replace(/\/+$/, ''), token, forwardTo, events };
}

interface Problem {
  status: number;
  code?: string;
  detail?: string;
  title?: string;
}

async function callApi(options: Options, method: string, path: string, body?: unknown) {
  const response = await request(`${options.api}${path}`, {
    method: method as 'POST',
    headers: {
      authorization: `Bearer ${options.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  let json: Record<string, unknown> = {};
  try {
    json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
  } catch {
    // Not Waybill's answer (a proxy's page): the status says what happened.
    json = { detail: `an answer that is not JSON (${response.statusCode})` };
  }
  return { status: response.statusCode, json };
}

function problemText(problem: Problem): string {
  return `${problem.detail ?? problem.title ?? 'refused'} (${problem.status}${problem.code ? ` ${problem.code}` : ''})`;
}

interface Registered {
  id: string;
  secret: string;
  event_types: string[];
}

async function register(options: Options): Promise<Registered> {
  const body = { forward_to: options.forwardTo, ...(options.events ? { event_types: options.events } : {}) };
  const { status, json } = await callApi(options, 'POST', '/v1/webhook-listeners', body);
  if (status !== 201)
    throw new CommandError(`Waybill refused to listen: ${problemText({ status, ...json })}`);
  return json as unknown as Registered;
}

/** POSTs one message to the local receiver, as the engine would: no redirects, one deadline. */
async function forward(options: Options, frame: MessageFrame): Promise<ResultFrame> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const response = await request(options.forwardTo, {
      method: 'POST',
      headers: frame.headers,
      body: frame.body,
      signal: AbortSignal.timeout(FORWARD_DEADLINE_MS),
    });
    const head = await readHead(response.body);
    return {
      type: 'result',
      id: frame.id,
      status_code: response.statusCode,
      error: null,
      duration_ms: elapsed(),
      body: head.toString('base64'),
    };
  } catch (err) {
    const timedOut = (err as { name?: string }).name === 'TimeoutError';
    return {
      type: 'result',
      id: frame.id,
      status_code: null,
      error: timedOut ? 'timeout' : 'connection_failed',
      duration_ms: elapsed(),
      body: null,
    };
  }
}

function line(frame: MessageFrame, result: ResultFrame): string {
  const outcome = result.status_code ?? result.error;
  return `${new Date().toISOString()}  ${frame.headers['webhook-event'] ?? 'message'}  ${outcome}  ${result.duration_ms} ms  ${frame.headers['webhook-id'] ?? ''}`;
}

/**
 * A message frame, or null for anything else: a frame that is not JSON, or JSON of another shape,
 * is logged (not its content) and skipped, and the connection goes on; other frame types
 * (`ready`) are skipped quietly.
 */
function messageFrame(data: unknown): MessageFrame | null {
  let value: unknown;
  try {
    value = JSON.parse(String(data));
  } catch {
    console.error(
      `${new Date().toISOString()}  ignored a frame that is not JSON (${String(data).length} characters)`,
    );
    return null;
  }
  const frame = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (frame.type !== 'message') {
    if (typeof frame.type !== 'string')
      console.error(`${new Date().toISOString()}  ignored a frame without a type`);
    return null;
  }
  const headers = frame.headers;
  const wellFormed =
    typeof frame.id === 'string' &&
    typeof frame.body === 'string' &&
    typeof headers === 'object' &&
    headers !== null &&
    !Array.isArray(headers) &&
    Object.values(headers).every((value) => typeof value === 'string');
  if (!wellFormed) {
    console.error(`${new Date().toISOString()}  ignored a message frame that is not well formed`);
    return null;
  }
  return frame as unknown as MessageFrame;
}

/** Holds one connection until it closes; resolves with whether it had opened. */
function connect(options: Options, listener: Registered, stop: AbortSignal): Promise<boolean> {
  const url = `${options.api.replace(/^http/, 'ws')}/v1/webhook-listeners/${listener.id}/connect`;
  return new Promise((resolve) => {
    let opened = false;
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${options.token}` } });
    const onStop = () => socket.close(1000, 'stopped');
    stop.addEventListener('abort', onStop, { once: true });
    socket.addEventListener('open', () => {
      opened = true;
    });
    socket.addEventListener('message', (event) => {
      const message = messageFrame(event.data);
      if (message === null) return;
      void forward(options, message).then((result) => {
        console.log(line(message, result));
        if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(result));
      });
    });
    socket.addEventListener('close', () => {
      stop.removeEventListener('abort', onStop);
      resolve(opened);
    });
    socket.addEventListener('error', () => {
      // 'close' follows.
    });
  });
}

async function stillThere(options: Options, id: string): Promise<boolean> {
  const { status } = await callApi(options, 'GET', `/v1/webhook-endpoints/${id}`);
  return status !== 404;
}

function announce(options: Options, listener: Registered): void {
  console.log(`Ready. Forwarding test events (${listener.event_types.join(', ')}) to ${options.forwardTo}`);
  console.log(`Listener ${listener.id}; its signing secret, to verify with: ${listener.secret}`);
}

export async function listenCommand(args: string[]): Promise<void> {
  let options: Options;
  try {
    options = readOptions(args);
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 2;
    return;
  }
  const stop = new AbortController();
  let listener: Registered;
  try {
    listener = await register(options);
  } catch (err) {
    console.error(
      err instanceof CommandError ? err.message : `Cannot reach Waybill at ${options.api}: ${String(err)}`,
    );
    process.exitCode = 1;
    return;
  }
  announce(options, listener);
  const stopped = new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => {
        stop.abort();
        resolve();
      });
  });
  let waitMs = 1000;
  while (!stop.signal.aborted) {
    const opened = await connect(options, listener, stop.signal);
    if (stop.signal.aborted) break;
    if (opened) waitMs = 1000;
    console.log(`Connection lost; reconnecting in ${Math.round(waitMs / 1000)} s`);
    await Promise.race([new Promise((resolve) => setTimeout(resolve, waitMs)), stopped]);
    waitMs = Math.min(waitMs * 2, RECONNECT_MAX_MS);
    if (stop.signal.aborted) break;
    try {
      // Gone after the grace period: a new listener, with a new secret.
      if (!(await stillThere(options, listener.id))) {
        listener = await register(options);
        announce(options, listener);
      }
    } catch {
      // Waybill is not reachable yet: try again.
    }
  }
  // Leaving on purpose: the listener goes now rather than after the grace period.
  await callApi(options, 'DELETE', `/v1/webhook-endpoints/${listener.id}`).catch(() => {});
  console.log('Stopped.');
}
