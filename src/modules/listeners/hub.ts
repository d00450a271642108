import type { WebSocket } from '@fastify/websocket';
import type { AppContext } from '../../context.ts';
import {
  notConnected,
  type OutgoingMessage,
  RESPONSE_LIMIT,
  type SendResult,
  setListenerTransport,
  type Transport,
} from '../../delivery/sender.ts';
import { type DeliveryWorker, startDeliveryWorker } from '../../delivery/worker.ts';
import { randomBase62 } from '../../lib/ids.ts';
import { type MessageFrame, parseResult, type ReadyFrame, type ResultFrame } from './protocol.ts';
import { touchListeners } from './service.ts';

/** How often connections are pinged and listeners marked alive (real time). */
const HEARTBEAT_MS = 20_000;

interface Connection {
  socket: WebSocket;
  pending: Map<string, (result: ResultFrame | null) => void>;
  /** Answered the last ping: a connection that did not by the next is dead. */
  alive: boolean;
}

/**
 * The `waybill listen` connections this process holds, and the delivery worker that sends to them.
 * The worker is the engine's own (claims, leases, retries, the log), limited to the listeners
 * connected here and sending over their connection instead of HTTP; the process-wide worker
 * never claims a listener's rows, which only the holder of its connection can reach.
 */
export class ListenerHub {
  readonly #ctx: AppContext;
  readonly #connections = new Map<string, Connection>();
  #worker: DeliveryWorker | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(ctx: AppContext) {
    this.#ctx = ctx;
    setListenerTransport(ctx, this.send);
  }

  isConnected(listenerId: string): boolean {
    return this.#connections.has(listenerId);
  }

  /** Takes a new connection for a listener (the caller checked that it is free and the caller's). */
  attach(listenerId: string, eventTypes: string[], socket: WebSocket): void {
    const connection: Connection = { socket, pending: new Map(), alive: true };
    this.#connections.set(listenerId, connection);
    socket.on('pong', () => {
      connection.alive = true;
    });
    socket.on('message', (data, isBinary) => {
      const result = isBinary ? null : parseResult(data.toString());
      if (!result) {
        socket.close(1008, 'unexpected frame');
        return;
      }
      connection.pending.get(result.id)?.(result);
    });
    socket.on('close', () => {
      if (this.#connections.get(listenerId) === connection) this.#connections.delete(listenerId);
      for (const settle of connection.pending.values()) settle(null);
      connection.pending.clear();
      // The grace period starts now.
      void touchListeners(this.#ctx, [listenerId]).catch(() => {});
    });
    socket.on('error', (err) => this.#ctx.log.debug({ err, listenerId }, 'listener connection error'));
    const ready: ReadyFrame = { type: 'ready', listener_id: listenerId, event_types: eventTypes };
    socket.send(JSON.stringify(ready));
    this.#start();
    // What waited while the listener was away is due now.
    this.#worker?.wake();
  }

  /** The worker's transport: one message over the listener's connection, its answer back. */
  readonly send: Transport = (listenerId: string, message: OutgoingMessage, deadlineMs: number) => {
    const connection = this.#connections.get(listenerId);
    if (!connection) return Promise.resolve(notConnected(0));
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const id = randomBase62(20);
    return new Promise<SendResult>((resolve) => {
      const timer = setTimeout(() => settle(null, true), deadlineMs);
      function settle(result: ResultFrame | null, timedOut = false): void {
        clearTimeout(timer);
        connection?.pending.delete(id);
        if (timedOut)
          resolve({ status_code: null, response_head: null, duration_ms: elapsed(), error: 'timeout' });
        else if (!result) resolve(notConnected(elapsed()));
        else
          resolve({
            status_code: result.status_code,
            response_head:
              result.body === null ? null : Buffer.from(result.body, 'base64').subarray(0, RESPONSE_LIMIT),
            // The command's own measure of its receiver, never more than the round trip here.
            duration_ms: Math.min(Math.round(result.duration_ms), elapsed()),
            error: result.error,
          });
      }
      connection.pending.set(id, settle);
      const frame: MessageFrame = { type: 'message', id, headers: message.headers, body: message.body };
      connection.socket.send(JSON.stringify(frame), (err) => {
        if (err) settle(null);
      });
    });
  };

  #start(): void {
    if (this.#closed || this.#worker) return;
    this.#worker = startDeliveryWorker(this.#ctx, {
      targets: () => [...this.#connections.keys()],
      transport: this.send,
      leaseMs: this.#ctx.config.webhookLeaseMs,
    });
    this.#timer = setInterval(() => void this.heartbeat(), HEARTBEAT_MS);
    this.#timer.unref();
  }

  /**
   * Pings every connection (a silent one is dropped) and marks the live ones alive; the
   * housekeeping job removes the listeners nobody marks (service.ts listenerSweepJob).
   */
  async heartbeat(): Promise<void> {
    for (const connection of this.#connections.values()) {
      if (!connection.alive) {
        connection.socket.terminate();
        continue;
      }
      connection.alive = false;
      connection.socket.ping();
    }
    const ids = [...this.#connections.keys()];
    try {
      await touchListeners(this.#ctx, ids);
    } catch (err) {
      this.#ctx.log.warn({ err }, 'listener heartbeat failed');
    }
  }

  /** Closes every connection (the commands reconnect elsewhere) and stops the worker. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    for (const connection of this.#connections.values()) connection.socket.close(1001, 'server going away');
    await this.#worker?.stop();
    this.#worker = null;
  }
}
