import { jetstream } from '@nats-io/jetstream';
import { type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import type { BrokerAddress } from './guard.ts';
import { BrokerFailure, type BrokerKind, type BrokerLink, type BrokerMessage } from './kind.ts';
import { connectOwned } from './nats-transport.ts';
import { ReadBudget } from './read-budget.ts';
import { addressFor, type NatsDestination } from './spec.ts';

function errorText(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 500);
}

/** What a connection's failure says, as an attempt's code. */
function connectFailure(error: unknown): BrokerFailure {
  if (error instanceof BrokerFailure) return error;
  const text = errorText(error);
  const name = error instanceof Error ? error.name : '';
  if (/Authorization|authentication/i.test(`${name} ${text}`)) return new BrokerFailure('auth_failed', text);
  if (/tls|certificate/i.test(text)) return new BrokerFailure('tls_failed', 'the TLS handshake failed');
  // The client's own words ("connection refused"): no address or credentials in them.
  return new BrokerFailure('connection_failed', `the broker could not be reached (${text})`);
}

/** What a refused publish says: a subject no stream listens to, or the stream's own refusal. */
function publishFailure(error: unknown, subject: string): BrokerFailure {
  const name = error instanceof Error ? error.name : '';
  const text = errorText(error);
  // JetStream answers a subject no stream captures with "no responders" (503), which the client
  // reports as JetStream not enabled.
  if (name === 'NoRespondersError' || /no responders|503|not enabled/i.test(text))
    return new BrokerFailure('broker_refused', `no stream listens to the subject ${subject} (${text})`);
  if (name === 'TimeoutError' || /timeout/i.test(text))
    return new BrokerFailure('timeout', 'the stream did not acknowledge in time');
  return new BrokerFailure('broker_refused', text);
}

/**
 * NATS JetStream (decision 0072): one connection per destination, without the client's own
 * reconnects (a broken link is dropped and the next message connects again, so the guard checks the
 * address each time). A message is published to JetStream with `Nats-Msg-Id` the webhook-id (the
 * stream's de-duplication key) and counts only once the stream acknowledges it. A subject no stream
 * captures is `broker_refused` with the reason.
 */
export const natsKind: BrokerKind<NatsDestination> = {
  type: 'nats',
  async connect(destination, address: BrokerAddress, deadlineMs) {
    const url = new URL(destination.url);
    const server = address.address.includes(':')
      ? `[${address.address}]:${address.port}`
      : `${address.address}:${address.port}`;
    let connection: NatsConnection;
    const budget = new ReadBudget();
    try {
      connection = await connectOwned(
        {
          servers: server,
          ...(url.username ? { user: decodeURIComponent(url.username) } : {}),
          ...(url.password ? { pass: decodeURIComponent(url.password) } : {}),
          // Ours ends the attempt (and its socket) first; the client's own only backs it up.
          timeout: deadlineMs * 2,
          reconnect: false,
          ignoreClusterUpdates: true,
          name: 'waybill-delivery',
          // The client takes no server name apart from the address: TLS checks the certificate against
          // the address dialled (decision 0072 names the limit).
          ...(url.protocol === 'tls:' ? { tls: {} } : {}),
        },
        deadlineMs,
        budget,
      );
    } catch (error) {
      throw connectFailure(error);
    }
    let closed = false;
    void connection.closed().then(() => {
      closed = true;
    });
    const stream = jetstream(connection, { timeout: deadlineMs });
    const link: BrokerLink = {
      get closed() {
        return closed || connection.isClosed();
      },
      async publish(message: BrokerMessage, publishDeadlineMs: number) {
        const subject = addressFor(destination.subject, message.eventType);
        const headers = natsHeaders();
        for (const [name, value] of Object.entries(message.headers)) headers.set(name, value);
        headers.set('content-type', 'application/json');
        try {
          await stream.publish(subject, message.body, {
            msgID: message.messageId,
            headers,
            timeout: publishDeadlineMs,
          });
        } catch (error) {
          const failure = publishFailure(error, subject);
          // A server that let the deadline pass is not waited on again: the next message connects anew.
          if (failure.code === 'timeout') await link.close();
          throw failure;
        }
        budget.refill();
      },
      async close() {
        closed = true;
        await connection.close().catch(() => {});
      },
    };
    return link;
  },
};
