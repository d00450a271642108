import type { SendError } from '../sender.ts';
import type { BrokerAddress } from './guard.ts';
import type { BrokerDestination } from './spec.ts';

/** One message as a broker carries it: the Standard Webhooks body, its headers, its id. */
export interface BrokerMessage {
  body: Buffer;
  /** webhook-id, webhook-timestamp, webhook-signature, webhook-event and the custom headers. */
  headers: Record<string, string>;
  /** The webhook-id: the broker's de-duplication key where it has one. */
  messageId: string;
  eventType: string;
}

/** A failed attempt's code and the reason shown in its log (the broker's words, never credentials). */
export class BrokerFailure extends Error {
  readonly code: SendError;

  constructor(code: SendError, reason: string) {
    super(reason);
    this.name = 'BrokerFailure';
    this.code = code;
  }
}

/** An open connection (and channel) to one broker destination. */
export interface BrokerLink {
  /** Resolves once the broker confirmed the message; throws a BrokerFailure otherwise. */
  publish(message: BrokerMessage, deadlineMs: number): Promise<void>;
  /** The broker closed it, or it broke: the next message connects again. */
  readonly closed: boolean;
  close(): Promise<void>;
}

/**
 * A destination kind (decision 0072): how to connect to one broker and publish to it. A new kind
 * (SQS, EventBridge, Pub/Sub, Kafka) is one more module with this shape, listed in KINDS.
 */
export interface BrokerKind<D extends BrokerDestination = BrokerDestination> {
  type: D['type'];
  /** Connects to the checked address (never the name again); throws a BrokerFailure. */
  connect(destination: D, address: BrokerAddress, deadlineMs: number): Promise<BrokerLink>;
}

/**
 * A connection that is not made within the deadline fails as a timeout: a broker that accepts the
 * socket and never answers costs a worker what a dead HTTP receiver does. One made too late is
 * handed to `onLate` to be closed.
 */
export function withDeadline<T>(
  promise: Promise<T>,
  deadlineMs: number,
  onLate: (late: Promise<T>) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      onLate(promise);
      reject(new BrokerFailure('timeout', 'connecting to the broker timed out'));
    }, deadlineMs);
    promise.then(
      (value) => {
        clearTimeout(timer);
        if (!done) resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        if (!done) reject(error);
      },
    );
  });
}
