import { randomBytes } from 'node:crypto';
import type { AppContext } from '../../../context.ts';
import { DAY } from '../../../lib/clock.ts';
import type { DemoSeed } from '../../../lib/demo.ts';
import { createCompany } from '../../accounts/companies.ts';
import { getPerson, signUp } from '../../accounts/users.ts';
import { demoInstallLink } from '../../apps/demo.ts';
import { upsertInstallation } from '../../apps/registry.ts';
import { createApp, listApps } from '../../apps/service.ts';
import type { Listing } from '../listing/rules.ts';
import { addCheckedScreenshot, uploadCheckedIcon } from '../media/service.ts';
import { replyToReview } from '../ratings/replies.ts';
import { createReview } from '../ratings/reviews.ts';
import { createSubmission } from '../submissions/service.ts';
import { decide, startReview } from '../vetting/service.ts';
import type { DemoLook } from './images.ts';
import { type DemoMedia, drawDemoMedia } from './media.ts';

const NOTIFIER_LOOK: DemoLook = {
  name: 'Parcel Notifier',
  colour: '#2b6cb0',
  accent: '#63b3ed',
  rows: [
    'Out for delivery: text sent to Ana',
    'Delivered: e-mail sent to Ben',
    'Held at depot: text sent to Chloé',
  ],
};
const CARRIER_LOOK: DemoLook = {
  name: 'Carrier Sync',
  colour: '#c05621',
  accent: '#f6ad55',
  rows: ['Pickup booked for SHP-1042', 'In transit: SHP-1039', 'Pickup booked for SHP-1045'],
};

/** The icon and two screenshots of a demo app (drawn and checked by media.ts), uploaded as a developer would. */
async function demoMedia(
  ctx: AppContext,
  developerId: string,
  appId: string,
  media: DemoMedia,
): Promise<void> {
  await uploadCheckedIcon(ctx, developerId, appId, media.icon);
  for (const screenshot of media.screenshots) {
    await addCheckedScreenshot(ctx, developerId, appId, screenshot);
  }
}

const DEMO_REVIEWS = [
  {
    company: 'Northwind Parcels',
    rating: 5,
    body: 'Our recipients stopped calling to ask where their parcel is. Set up in ten minutes.',
    reply: 'Thank you! Tell us which message you would like to add next.',
  },
  {
    company: 'Tienda Lisboa',
    rating: 4,
    body: 'Los avisos por SMS funcionan muy bien; nos falta poder cambiar el texto del mensaje.',
    reply: null,
  },
  {
    company: 'Harbour Goods',
    rating: 3,
    body: 'Does what it says. Texts sometimes arrive a minute after the e-mail.',
    reply: null,
  },
];

/**
 * Reviews of the published demo app by three made-up companies, installed a month ago (an
 * installation must be in force 7 days), and the demo company installed ten days ago, so that
 * the owner sees the review form.
 */
async function demoReviews(
  ctx: AppContext,
  appId: string,
  developerId: string,
  seed: DemoSeed,
  ownerId: string | undefined,
): Promise<void> {
  const daysAgo = (days: number): AppContext => ({
    ...ctx,
    clock: { ...ctx.clock, now: () => new Date(ctx.clock.now().getTime() - days * DAY) },
  });
  const installAt = (at: AppContext, tenantId: string, userId: string) =>
    ctx.db.transaction().execute((trx) =>
      upsertInstallation(at, trx, {
        appId,
        tenantId,
        userId,
        customerAccountId: null,
        scopes: ['shipments:read', 'webhooks:write'],
      }),
    );
  for (const [i, entry] of DEMO_REVIEWS.entries()) {
    const person = await signUp(
      ctx,
      {
        email: `reviews${i + 1}@demo.waybill.test`,
        password: randomBytes(24).toString('base64url'),
        name: `${entry.company} owner`,
      },
      { verified: true },
    );
    const company = await createCompany(ctx, person.id, { name: entry.company });
    await installAt(daysAgo(30 - i * 5), company.id, person.id);
    const review = await createReview(ctx, person.id, appId, { rating: entry.rating, body: entry.body });
    if (entry.reply) await replyToReview(ctx, developerId, appId, review.id, { body: entry.reply });
  }
  if (ownerId) await installAt(daysAgo(10), seed.tenantId, ownerId);
}

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

  // Drawn in a child process while the apps are made here (media.ts).
  const drawing = drawDemoMedia([NOTIFIER_LOOK, CARRIER_LOOK], ctx.log);
  // Awaited below; a return before that leaves it unawaited, not unhandled.
  drawing.catch(() => {});
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
  const [notifierMedia, carrierMedia] = await drawing;
  if (!notifierMedia || !carrierMedia) throw new Error('the demo images were not drawn');
  await demoMedia(ctx, developerId, notifier.id, notifierMedia);
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
  await demoReviews(ctx, notifier.id, developerId, seed, people.owner);

  const carrierSync = (await listApps(ctx, developerId, { limit: 100 })).data.find(
    (app) => app.name === 'Demo Carrier Sync',
  );
  if (!carrierSync) return;
  await demoMedia(ctx, developerId, carrierSync.id, carrierMedia);
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
  const start = demoInstallLink(ctx, carrierSync);
  seed.lines.push(
    `  App Store         ${notifier.name} is published; ${carrierSync.name} waits for the reviewer`,
    `  install (demo)    ${start.link}`,
    `  code verifier     ${start.verifier}`,
  );
}
