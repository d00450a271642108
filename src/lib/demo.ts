import type { AppContext } from '../context.ts';

/** What the demo seed made, handed to each module that adds to it (src/seed.ts). */
export interface DemoSeed {
  tenantId: string;
  customerAccountId: string;
  lines: string[];
}

/** A module's addition to the demo (an app for the developer, a store listing). */
export type DemoExtension = (
  ctx: AppContext,
  seed: DemoSeed,
  people: Record<string, string>,
) => Promise<void>;

/**
 * The domain of the demo's own people (src/seed.ts). `.test` is reserved (RFC 2606): no mail reaches
 * it and nobody owns it, so the development mailbox may hand out its links (mailbox-page.ts).
 */
export const DEMO_EMAIL_DOMAIN = 'demo.waybill.test';

/** An address of the demo's own: the demo's domain or one below it. */
export function isDemoAddress(email: string): boolean {
  const domain = email.trim().toLowerCase().split('@').at(-1) ?? '';
  return email.includes('@') && (domain === DEMO_EMAIL_DOMAIN || domain.endsWith(`.${DEMO_EMAIL_DOMAIN}`));
}
