import type { Agent } from 'undici';
import type { DeliveryContext } from '../context.ts';
import { GuardRefusal } from '../guard.ts';
import type { OutgoingMessage, SendError, SendResult, Transport } from '../sender.ts';
import { checkBrokerAddress } from './guard.ts';
import { sendHttps } from './https.ts';
import { BrokerFailure, type BrokerKind, type BrokerLink, type BrokerMessage } from './kind.ts';
import { type BrokerDestination, openDestination, sealedOf } from './spec.ts';

/**
 * Each kind's module, imported by its first connection: the broker clients (amqplib, the NATS
 * client: 13 and 25 MB once loaded) stay out of a process that delivers to none (decision 0075).
 */
const KINDS: {
  [K in BrokerDestination['type']]: () => Promise<BrokerKind<Extract<BrokerDestination, { type: K }>>>;
} = {
  rabbitmq: async () => (await import('./rabbitmq.ts')).rabbitMqKind,
  nats: async () => (await import('./nats.ts')).natsKind,
};

/** A broker connection unused this long is closed. */
export const IDLE_MS = 60_000;
const SWEEP_MS = 15_000;

interface Held {
  link: Promise<BrokerLink>;
  /** Clock time (ms) of its last message. */
  lastUsed: number;
}

function failure(code: SendError, reason: string, started: number): SendResult {
  return {
    status_code: null,
    response_head: Buffer.from(reason.slice(0, 4096), 'utf8'),
    duration_ms: Math.round(performance.now() - started),
    error: code,
  };
}

/** Whatever a connection or publish threw, as a code and a reason fit for a tenant to read. */
function failureOf(error: unknown): { code: SendError; reason: string } {
  if (error instanceof BrokerFailure) return { code: error.code, reason: error.message };
  if (error instanceof GuardRefusal)
    return { code: error.kind === 'dns' ? 'dns_failed' : 'address_not_allowed', reason: error.message };
  return { code: 'connection_failed', reason: 'the connection to the broker failed' };
}

/**
 * Where a worker's (or the API's) messages go: HTTPS through the guarded agent, brokers through
 * one connection per destination, kept while it is used, closed when idle, opened again after the
 * broker closed it (a restart). A destination is known by its sealed text, so a changed
 * destination (new credentials) is a new connection, and the old one idles out.
 */
export class Destinations {
  readonly #ctx: DeliveryContext;
  readonly #agent: Agent;
  readonly #deadlineMs: number;
  readonly #links = new Map<string, Held>();
  readonly #opened = new Map<string, BrokerDestination>();
  #sweeper: NodeJS.Timeout | null = null;

  constructor(ctx: DeliveryContext, agent: Agent, deadlineMs: number) {
    this.#ctx = ctx;
    this.#agent = agent;
    this.#deadlineMs = deadlineMs;
  }

  /** The engine's Transport over every kind. */
  readonly transport: Transport = (_targetId, message, deadlineMs) => this.send(message, deadlineMs);

  /** Connections open now (for tests and the bench). */
  get openLinks(): number {
    return this.#links.size;
  }

  async send(message: OutgoingMessage, deadlineMs = this.#deadlineMs): Promise<SendResult> {
    const sealed = sealedOf(message.url);
    if (sealed === null) return sendHttps(this.#agent, message, deadlineMs);
    const started = performance.now();
    let destination: BrokerDestination;
    try {
      destination = this.#open(sealed);
    } catch {
      return failure('broker_refused', 'the destination could not be read', started);
    }
    const brokerMessage: BrokerMessage = {
      body: Buffer.from(message.body, 'utf8'),
      headers: brokerHeaders(message),
      messageId: message.headers['webhook-id'] ?? '',
      eventType: message.headers['webhook-event'] ?? '',
    };
    try {
      const link = await this.#link(sealed, destination, deadlineMs);
      await link.publish(brokerMessage, deadlineMs);
      return {
        status_code: null,
        response_head: null,
        duration_ms: Math.round(performance.now() - started),
        error: null,
      };
    } catch (error) {
      const { code, reason } = failureOf(error);
      return failure(code, reason, started);
    }
  }

  #open(sealed: string): BrokerDestination {
    let destination = this.#opened.get(sealed);
    if (!destination) {
      destination = openDestination(this.#ctx.secrets, sealed);
      if (this.#opened.size >= 10_000) this.#opened.clear();
      this.#opened.set(sealed, destination);
    }
    return destination;
  }

  async #link(sealed: string, destination: BrokerDestination, deadlineMs: number): Promise<BrokerLink> {
    const now = this.#ctx.clock.now().getTime();
    const held = this.#links.get(sealed);
    if (held) {
      held.lastUsed = now;
      const link = await held.link.catch(() => null);
      if (link && !link.closed) return link;
      if (this.#links.get(sealed) === held) this.#links.delete(sealed);
    }
    const connecting = checkBrokerAddress(this.#ctx, destination).then(async (address) => {
      const kind = (await KINDS[destination.type]()) as BrokerKind;
      return kind.connect(destination, address, deadlineMs);
    });
    this.#links.set(sealed, { link: connecting, lastUsed: now });
    this.#sweepSoon();
    // A failed connection is not kept: the next message tries again (after its retry's wait).
    connecting.catch(() => {
      if (this.#links.get(sealed)?.link === connecting) this.#links.delete(sealed);
    });
    return connecting;
  }

  #sweepSoon(): void {
    if (this.#sweeper) return;
    this.#sweeper = setInterval(() => this.closeIdle(), SWEEP_MS);
    this.#sweeper.unref();
  }

  /**
   * Closes the connections unused for IDLE_MS by the clock: every SWEEP_MS of real time, and on
   * each turn of a worker driven by hand (a test moves the clock and sees them closed).
   */
  closeIdle(): void {
    const now = this.#ctx.clock.now().getTime();
    for (const [sealed, held] of this.#links) {
      if (now - held.lastUsed < IDLE_MS) continue;
      this.#links.delete(sealed);
      void held.link.then((link) => link.close()).catch(() => {});
    }
    if (this.#links.size === 0 && this.#sweeper) {
      clearInterval(this.#sweeper);
      this.#sweeper = null;
    }
  }

  /** Closes every broker connection (the worker stops). */
  async close(): Promise<void> {
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = null;
    const links = [...this.#links.values()];
    this.#links.clear();
    await Promise.all(links.map((held) => held.link.then((link) => link.close()).catch(() => {})));
  }
}

/** HTTP's own headers stay behind; Waybill's and the custom ones travel with the message. */
const HTTP_ONLY = new Set(['content-type', 'user-agent']);

function brokerHeaders(message: OutgoingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers))
    if (!HTTP_ONLY.has(name)) headers[name] = value;
  return headers;
}
