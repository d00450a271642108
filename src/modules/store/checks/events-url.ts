import type { AppContext } from '../../../context.ts';
import { userAgent } from '../../../delivery/message.ts';
import {
  guardedAgent,
  type OutgoingMessage,
  responseText,
  type SendResult,
  sendMessage,
} from '../../../delivery/sender.ts';
import { signatureHeader } from '../../../delivery/signing.ts';
import { newSigningSecret } from '../../../lib/crypto.ts';
import { newId } from '../../../lib/ids.ts';
import { eventsSigningSecrets } from '../../apps/secrets.ts';
import { buildEnvelope } from '../../shipments/events.ts';
import type { Check, CheckDetail, CheckedApp, CheckName } from './check.ts';

/**
 * The test message has no real company (spec 6, delivery rule 8): these placeholders stand for the
 * company, installation and merchant account, so a receiver can recognise them besides `test: true`.
 */
export const TEST_TENANT_ID = '00000000-0000-0000-0000-000000000000';
export const TEST_INSTALLATION_ID = 'inst_0000000000000000000000';
export const TEST_CUSTOMER_ACCOUNT_ID = 'acct_0000000000000000000000';

/**
 * The one place the checks read the app's events secrets (through apps/secrets.ts): every secret
 * that signs its app events now, so the test is signed exactly as a real app event would be.
 */
async function signingSecretsOf(ctx: AppContext, appId: string): Promise<string[]> {
  const row = await ctx.db
    .selectFrom('apps')
    .select(['events_secret_sealed', 'events_previous_secret_sealed', 'events_previous_secret_expires_at'])
    .where('id', '=', appId)
    .executeTakeFirstOrThrow();
  return eventsSigningSecrets(ctx, row);
}

/** An app.uninstalled test envelope (spec 2.6 and 2.7) with `test: true` and the placeholder company. */
function testMessage(ctx: AppContext, url: string, secrets: string[]): OutgoingMessage {
  const now = ctx.clock.now();
  const id = newId('evt');
  const timestamp = Math.floor(now.getTime() / 1000);
  const body = buildEnvelope({
    id,
    type: 'app.uninstalled',
    tenantId: TEST_TENANT_ID,
    livemode: false,
    createdAt: now,
    test: true,
    data: {
      installation_id: TEST_INSTALLATION_ID,
      customer_account_id: TEST_CUSTOMER_ACCOUNT_ID,
      uninstalled_at: now.toISOString(),
    },
  });
  return {
    url,
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': userAgent(ctx),
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, id, timestamp, body),
      'webhook-event': 'app.uninstalled',
    },
  };
}

/** The same message, signed with a random key that is not the app's. */
function wronglySigned(message: OutgoingMessage): OutgoingMessage {
  const headers = message.headers;
  const signature = signatureHeader(
    [newSigningSecret()],
    headers['webhook-id'] as string,
    Number(headers['webhook-timestamp']),
    message.body,
  );
  return { ...message, headers: { ...headers, 'webhook-signature': signature } };
}

/**
 * The answer as text that a jsonb column holds: the checks are stored with the submission, and
 * PostgreSQL refuses a NUL in jsonb (and text), so a receiver answering one made the submission a
 * 500. Bytes that are not UTF-8 are already U+FFFD (responseText); a NUL becomes U+FFFD as well.
 * Delivery attempts keep their answers as bytes (bytea) and need none of this.
 */
function storableText(head: Uint8Array | null): string | null {
  return responseText(head)?.replaceAll('\u0000', '\ufffd') ?? null;
}

function received(result: SendResult): NonNullable<CheckDetail['received']> {
  return {
    status_code: result.status_code,
    duration_ms: result.duration_ms,
    body: storableText(result.response_head),
    error: result.error,
  };
}

function answered(result: SendResult): string {
  return result.status_code !== null ? `answered ${result.status_code}` : `gave no answer (${result.error})`;
}

function noEventsUrl(name: CheckName): Check {
  return { name, passed: false, detail: { summary: 'The app has no events URL: nothing was sent.' } };
}

/** events_url_rejects_bad_signature and events_url_accepts_signed_test: one wrongly signed message, then one signed. */
export async function eventsUrlChecks(ctx: AppContext, app: CheckedApp): Promise<Check[]> {
  if (!app.events_url) {
    return [noEventsUrl('events_url_rejects_bad_signature'), noEventsUrl('events_url_accepts_signed_test')];
  }
  const good = testMessage(ctx, app.events_url, await signingSecretsOf(ctx, app.id));
  const bad = wronglySigned(good);
  const agent = guardedAgent(ctx, { connectionsPerOrigin: 1 });
  try {
    // The wrong signature goes first: a receiver that remembers webhook-ids must not have seen the
    // id yet when the good message arrives with it.
    const badResult = await sendMessage(agent, bad);
    const goodResult = await sendMessage(agent, good);
    const rejected =
      badResult.status_code !== null && badResult.status_code >= 400 && badResult.status_code < 500;
    const accepted =
      goodResult.error === null &&
      goodResult.status_code !== null &&
      goodResult.status_code >= 200 &&
      goodResult.status_code < 300;
    return [
      {
        name: 'events_url_rejects_bad_signature',
        passed: rejected,
        detail: {
          summary: rejected
            ? `A message with a wrong signature was refused: the events URL ${answered(badResult)}.`
            : `A message with a wrong signature must get a 4xx answer; the events URL ${answered(badResult)}.`,
          sent: { url: bad.url, headers: bad.headers, body: bad.body },
          received: received(badResult),
        },
      },
      {
        name: 'events_url_accepts_signed_test',
        passed: accepted,
        detail: {
          summary: accepted
            ? `The signed app.uninstalled test message was accepted: the events URL ${answered(goodResult)}.`
            : `The signed app.uninstalled test message must get a 2xx answer; the events URL ${answered(goodResult)}.`,
          sent: { url: good.url, headers: good.headers, body: good.body },
          received: received(goodResult),
        },
      },
    ];
  } finally {
    await agent.close();
  }
}
