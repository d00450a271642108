import amqp from 'amqplib';
import type { BrokerAddress } from './guard.ts';
import { BrokerFailure, type BrokerKind, type BrokerLink, type BrokerMessage, withDeadline } from './kind.ts';
import { meterReads, socketsOpenedBy } from './owned-sockets.ts';
import { ReadBudget } from './read-budget.ts';
import { addressFor, type RabbitMqDestination } from './spec.ts';

/**
 * The AMQP 0-9-1 reply text of a refusal, without what precedes it: amqplib's messages read
 * `Channel closed by server: 404 (NOT-FOUND) with message "NOT_FOUND - no exchange 'x' in vhost 'v'"`.
 */
function brokerReason(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const quoted = /with message "(.*)"/.exec(text);
  return (quoted?.[1] ?? text).slice(0, 500);
}

/** What a connection's failure says, as an attempt's code. */
function connectFailure(error: unknown): BrokerFailure {
  if (error instanceof BrokerFailure) return error;
  const reason = brokerReason(error);
  if (/ACCESS.REFUSED|403|auth/i.test(reason)) return new BrokerFailure('auth_failed', reason);
  // A vhost that is not there (or not the user's): the broker refused.
  if (/NOT.ALLOWED|530|vhost/i.test(reason)) return new BrokerFailure('broker_refused', reason);
  const code = String((error as { code?: unknown }).code ?? '');
  if (code === 'ETIMEDOUT' || /ETIMEDOUT/.test(reason))
    return new BrokerFailure('timeout', 'connecting to the broker timed out');
  if (/^ERR_TLS|^ERR_SSL|CERT/.test(code)) return new BrokerFailure('tls_failed', 'the TLS handshake failed');
  return new BrokerFailure('connection_failed', `the broker could not be reached (${code || 'closed'})`);
}

/**
 * RabbitMQ (decision 0072): one connection and one confirm channel per destination. A message is
 * published `mandatory` and persistent, with `message_id` the webhook-id and the Standard Webhooks
 * headers as AMQP headers; it counts only once the broker confirms it (basic.ack). A message the
 * exchange routed nowhere comes back (basic.return) before its confirmation: `broker_unroutable`.
 * A refusal that closes the channel (an exchange that is not there) closes the link, and the next
 * message connects again.
 */
/** Waybill's messages are at most 1 MB; a frame this size carries one with room to spare. */
const MAX_FRAME_BYTES = 2 * 1024 * 1024;

export const rabbitMqKind: BrokerKind<RabbitMqDestination> = {
  type: 'rabbitmq',
  async connect(destination, address: BrokerAddress, deadlineMs) {
    const url = new URL(destination.url);
    const vhost = decodeURIComponent(url.pathname.replace(/^\//, '')) || '/';
    const tls = url.protocol === 'amqps:';
    const budget = new ReadBudget();
    // The connection and its confirm channel within one deadline, however the broker behaves. The
    // socket amqplib dials is Waybill's too: its reads are metered, and the deadline ends it.
    const { value: opening, sockets } = socketsOpenedBy(() =>
      amqp
        .connect(
          {
            protocol: tls ? 'amqps' : 'amqp',
            hostname: address.address,
            port: address.port,
            // Never RabbitMQ's default guest/guest: a URL without credentials is refused when written.
            username: decodeURIComponent(url.username),
            password: decodeURIComponent(url.password),
            vhost,
            heartbeat: 30,
            // A company's broker may announce any frame size: ours is capped (amqplib closes the
            // connection on a larger frame) rather than grown to what the server says (finding M2).
            frameMax: MAX_FRAME_BYTES,
            maxFrameSize: MAX_FRAME_BYTES,
          },
          { timeout: deadlineMs, ...(tls ? { servername: address.host } : {}) },
        )
        .then(async (connection) => {
          // Until the link listens below, an error only closes it (never an unhandled 'error').
          connection.on('error', () => {});
          try {
            return { connection, channel: await connection.createConfirmChannel() };
          } catch (error) {
            await connection.close().catch(() => {});
            throw error;
          }
        }),
    );
    for (const socket of sockets) meterReads(socket, budget);
    let opened: { connection: amqp.ChannelModel; channel: amqp.ConfirmChannel };
    try {
      opened = await withDeadline(opening, deadlineMs, () => {
        for (const socket of sockets) socket.destroy();
      });
    } catch (error) {
      throw connectFailure(error);
    }
    const { connection, channel } = opened;
    let closed = false;
    let closeReason = 'the broker closed the connection';
    const returned = new Set<string>();
    const pending = new Set<(error: BrokerFailure) => void>();
    const fail = (reason: string) => {
      if (closed) return;
      closed = true;
      closeReason = reason;
      for (const reject of pending) reject(new BrokerFailure('broker_refused', reason));
      pending.clear();
      void connection.close().catch(() => {});
    };
    connection.on('error', (error: unknown) => fail(brokerReason(error)));
    connection.on('close', (error?: unknown) => fail(error ? brokerReason(error) : closeReason));
    channel.on('error', (error: unknown) => fail(brokerReason(error)));
    channel.on('close', () => fail(closeReason));
    channel.on('return', (message: amqp.Message) => {
      const id = message.properties.messageId;
      if (typeof id === 'string') returned.add(id);
    });

    const link: BrokerLink = {
      get closed() {
        return closed;
      },
      publish(message: BrokerMessage, publishDeadlineMs: number) {
        if (closed) return Promise.reject(new BrokerFailure('broker_refused', closeReason));
        return new Promise<void>((resolve, reject) => {
          const settle = (error: BrokerFailure | null) => {
            clearTimeout(timer);
            pending.delete(onClose);
            if (error) reject(error);
            else resolve();
          };
          const onClose = (error: BrokerFailure) => settle(error);
          const timer = setTimeout(() => {
            settle(new BrokerFailure('timeout', 'the broker did not confirm in time'));
            // A broker that let the deadline pass is not waited on again: the next message connects anew.
            fail('the broker did not confirm in time');
          }, publishDeadlineMs);
          pending.add(onClose);
          channel.publish(
            destination.exchange,
            addressFor(destination.routing_key, message.eventType),
            message.body,
            {
              mandatory: true,
              persistent: true,
              contentType: 'application/json',
              messageId: message.messageId,
              headers: message.headers,
            },
            (error: unknown) => {
              if (error) return settle(new BrokerFailure('broker_refused', brokerReason(error)));
              if (returned.delete(message.messageId)) {
                return settle(
                  new BrokerFailure(
                    'broker_unroutable',
                    `NO_ROUTE - exchange '${destination.exchange}' routed the message to no queue`,
                  ),
                );
              }
              budget.refill();
              settle(null);
            },
          );
        });
      },
      async close() {
        closed = true;
        await connection.close().catch(() => {});
      },
    };
    return link;
  },
};
