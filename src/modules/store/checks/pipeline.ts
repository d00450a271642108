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
import { justificationGaps, type Listing } from '../listing/rules.ts';
import { checkMediaSet, type MediaCheckItem, type MediaNames } from '../media/service.ts';

export const CHECK_NAMES = [
  'events_url_rejects_bad_signature',
  'events_url_accepts_signed_test',
  'scope_justifications_complete',
  'listing_media_valid',
] as const;
export type CheckName = (typeof CHECK_NAMES)[number];

/** One automated check (CONTRACT.md, submission fields). A failing check never rejects by itself. */
export interface Check {
  name: CheckName;
  passed: boolean;
  detail: CheckDetail;
}

export interface CheckDetail {
  /** One sentence for people. */
  summary: string;
  /** The message sent: URL, every header, the body as sent. */
  sent?: { url: string; headers: Record<string, string>; body: string };
  /** What came back: status, time taken, the first 4 KB of the answer, or why there was none. */
  received?: {
    status_code: number | null;
    duration_ms: number;
    body: string | null;
    error: string | null;
  };
  /** scope_justifications_complete: the requested scopes and those lacking a fitting justification. */
  scopes?: string[];
  missing?: { scope: string; problem: string }[];
  /** listing_media_valid: the images the submission carries, and what is wrong with the set. */
  media?: MediaCheckItem[];
  problems?: string[];
}

/**
 * The test message has no real company (spec 6, delivery rule 8): these placeholders stand for the
 * company, installation and merchant account, so a receiver can recognise them besides `test: true`.
 */
export const TEST_TENANT_ID = '00000000-0000-0000-0000-000000000000';
export const TEST_INSTALLATION_ID = 'inst_0000000000000000000000';
export const TEST_CUSTOMER_ACCOUNT_ID = 'acct_0000000000000000000000';

/** What the checks need of the app: its id (whose events secret signs) and the values under review. */
export interface CheckedApp {
  id: string;
  scopes: readonly string[];
  events_url: string | null;
}

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

async function eventsUrlChecks(ctx: AppContext, app: CheckedApp): Promise<Check[]> {
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

function justificationCheck(app: CheckedApp, listing: Pick<Listing, 'scope_justifications'> | null): Check {
  const missing = justificationGaps(listing?.scope_justifications ?? [], app.scopes);
  return {
    name: 'scope_justifications_complete',
    passed: missing.length === 0,
    detail: {
      summary:
        missing.length === 0
          ? 'Every requested scope has a justification of 20 to 300 characters.'
          : `Missing or misfit justifications: ${missing.map((m) => m.scope).join(', ')}.`,
      scopes: [...app.scopes],
      missing,
    },
  };
}

async function mediaCheck(ctx: AppContext, appId: string, names: MediaNames): Promise<Check> {
  const { problems, items } = await checkMediaSet(ctx, appId, names);
  return {
    name: 'listing_media_valid',
    passed: problems.length === 0,
    detail: {
      summary:
        problems.length === 0
          ? `An icon and ${names.screenshots.length} screenshot${names.screenshots.length === 1 ? '' : 's'}, each PNG or JPEG of the right size, without metadata.`
          : `The listing's images are not complete: ${problems.join('; ')}.`,
      media: items,
      problems,
    },
  };
}

/**
 * The automated checks of spec 6, delivery rule 8, run at submission and on demand: the events URL
 * must refuse a wrongly signed message (4xx) and accept a correctly signed app.uninstalled test
 * message (2xx), and every requested scope needs a justification, and the listing needs its images. Sent through the delivery
 * engine's guarded connection: no redirects, 10 s deadline, first 4 KB of the answer.
 */
export async function runSubmissionChecks(
  ctx: AppContext,
  app: CheckedApp,
  listing: Pick<Listing, 'scope_justifications'> | null,
  media: MediaNames,
): Promise<Check[]> {
  return [
    ...(await eventsUrlChecks(ctx, app)),
    justificationCheck(app, listing),
    await mediaCheck(ctx, app.id, media),
  ];
}
