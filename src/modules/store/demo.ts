import { createHash, randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import type { DemoSeed } from '../../lib/demo.ts';
import { getPerson } from '../accounts/users.ts';
import { type App, createApp, listApps } from '../apps/service.ts';
import type { Listing } from './listing.ts';
import { decide, startReview } from './review.ts';
import { createSubmission } from './submissions.ts';

const PUBLISHED_LISTING: Listing = {
  tagline: 'Tell recipients where their parcel is',
  description_en:
    'Parcel Notifier sends your recipients an e-mail or a text message whenever a shipment moves: picked up, out for delivery, delivered, or held.',
  description_es:
    'Parcel Notifier avisa a tus destinatarios por correo o SMS cada vez que un envío avanza: recogido, en reparto, entregado o retenido.',
  category: 'notifications',
  app_url: 'https://parcel-notifier.example/connect',
  scope_justifications: [
    {
      scope: 'shipments:read',
      justification: 'Reads each shipment’s status and recipient so that the right person hears about it.',
    },
    {
      scope: 'webhooks:write',
      justification:
        'Creates one webhook endpoint so that we learn of status changes the moment they happen.',
    },
  ],
};

const WAITING_LISTING: Listing = {
  tagline: 'Your carrier account, in step with Waybill',
  description_en:
    'Carrier Sync books pickups with your carrier for every confirmed shipment and writes the carrier’s tracking events back to Waybill.',
  description_es:
    'Carrier Sync reserva la recogida con tu transportista para cada envío confirmado y devuelve a Waybill los eventos de seguimiento.',
  category: 'shipping',
  app_url: 'https://carrier-sync.example/connect',
  scope_justifications: [
    {
      scope: 'shipments:read',
      justification: 'Reads confirmed shipments to book their pickup with your carrier.',
    },
    {
      scope: 'shipments:write',
      justification: 'Moves shipments to picked up and in transit when the carrier reports it.',
    },
    {
      scope: 'webhooks:write',
      justification: 'Creates an endpoint so that new shipments reach the carrier without polling.',
    },
  ],
};

/**
 * The start link the demo app's own page would send people to: an authorization request with a
 * PKCE challenge, printed with its verifier so the code can be exchanged by hand.
 */
function demoStartLink(ctx: AppContext, app: App): { link: string; verifier: string } {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: app.id,
    redirect_uri: app.redirect_uris[0] ?? '',
    scope: app.scopes.join(' '),
    state: 'demo',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  return { link: `${ctx.config.webUrl}/oauth/authorize?${query}`, verifier };
}

/**
 * The App Store's demo: a published app with its listing in English and Spanish (submitted by the
 * developer and approved by the demo reviewer, through the same services as the API), and a
 * submission of the demo app waiting for the reviewer. The automated checks run for real against
 * the made-up events URLs and fail (the names do not resolve): the reviewer sees that.
 */
export async function seedDemoStore(
  ctx: AppContext,
  seed: DemoSeed,
  people: Record<string, string>,
): Promise<void> {
  const developerId = people.developer;
  const reviewerId = people.reviewer;
  if (!developerId || !reviewerId) return;
  // An operator who names other reviewers keeps the demo reviewer out of the console: no store demo.
  if (!(await getPerson(ctx, reviewerId)).is_reviewer) return;

  const notifier = await createApp(ctx, developerId, {
    name: 'Parcel Notifier',
    description: 'Tells your recipients where their parcel is (demo app)',
    homepage_url: 'https://parcel-notifier.example',
    privacy_url: 'https://parcel-notifier.example/privacy',
    support_url: 'https://parcel-notifier.example/support',
    redirect_uris: ['https://parcel-notifier.example/oauth/callback'],
    scopes: ['shipments:read', 'webhooks:write'],
    kind: 'confidential',
  });
  // The events URL comes with the submission: approval gives it to the live app.
  const first = await createSubmission(ctx, developerId, notifier.id, {
    listing: PUBLISHED_LISTING,
    events_url: 'https://parcel-notifier.example/waybill/events',
  });
  await startReview(ctx, reviewerId, first.id);
  await decide(ctx, reviewerId, first.id, {
    decision: 'approved',
    note: 'Clear listing. Welcome to the store.',
  });

  const carrierSync = (await listApps(ctx, developerId, { limit: 100 })).data.find(
    (app) => app.name === 'Demo Carrier Sync',
  );
  if (!carrierSync) return;
  await createSubmission(ctx, developerId, carrierSync.id, {
    listing: {
      ...WAITING_LISTING,
      scope_justifications: WAITING_LISTING.scope_justifications.filter((j) =>
        (carrierSync.scopes as readonly string[]).includes(j.scope),
      ),
    },
    events_url: 'https://carrier-sync.example/waybill/events',
    note: 'First submission of our carrier integration.',
  });
  const start = demoStartLink(ctx, carrierSync);
  seed.lines.push(
    `  App Store         ${notifier.name} is published; ${carrierSync.name} waits for the reviewer`,
    `  install (demo)    ${start.link}`,
    `  code verifier     ${start.verifier}`,
  );
}
