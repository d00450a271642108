import type { AppContext } from './context.ts';
import { DEMO_EMAIL_DOMAIN, type DemoExtension, type DemoSeed } from './lib/demo.ts';
import type { TenantAccess } from './modules/accounts/access.ts';
import { createApiToken } from './modules/accounts/api-tokens.ts';
import { addMember, createCompany, createCustomerAccount, goLive } from './modules/accounts/companies.ts';
import { SCOPES } from './modules/accounts/roles.ts';
import { signUp } from './modules/accounts/users.ts';
import { demoAppReminder, seedDemoApp } from './modules/apps/demo.ts';
import { seedDemoConsole } from './modules/console/demo.ts';
import { createShipment, moveShipment } from './modules/shipments/service.ts';
import { seedDemoStore } from './modules/store/index.ts';

export const DEMO_PASSWORD = 'waybill-demo-1';

export const DEMO_PEOPLE = {
  owner: { email: `owner@${DEMO_EMAIL_DOMAIN}`, name: 'Olivia Owner' },
  merchant: { email: `merchant@${DEMO_EMAIL_DOMAIN}`, name: 'Marco Merchant' },
  developer: { email: `developer@${DEMO_EMAIL_DOMAIN}`, name: 'Dana Developer' },
  reviewer: { email: `reviewer@${DEMO_EMAIL_DOMAIN}`, name: 'Rene Reviewer' },
} as const;

/** Modules' additions to the demo, in order (their types live in lib/demo.ts: no import circle). */
export const demoExtensions: DemoExtension[] = [];
demoExtensions.push(seedDemoApp, seedDemoConsole, seedDemoStore);

const DEMO_KEY_NAME = 'Demo test key';

/** The sign-ins, the test key (its secret, or where to make another) and the MCP address. */
function demoLines(ctx: AppContext, key: string): string[] {
  return [
    `  company owner     ${DEMO_PEOPLE.owner.email}`,
    `  merchant admin    ${DEMO_PEOPLE.merchant.email}`,
    `  app developer     ${DEMO_PEOPLE.developer.email}`,
    `  reviewer          ${DEMO_PEOPLE.reviewer.email}`,
    `  password (all)    ${DEMO_PASSWORD}`,
    `  test API key      ${key}`,
    `  MCP for agents    ${ctx.config.baseUrl}/mcp   (test orders 1042 and 1043 to find; README: Agents)`,
  ];
}

/**
 * On a restart (the demo seeded by an earlier start): the same sign-ins again, the test key by its
 * hint only (Waybill keeps a hash; the secret was printed once) with where to make another, and the
 * demo app's client id, redirect URI and install links (a new `install (demo)` link and verifier).
 * Null when the database holds no demo (a real deployment with people of its own).
 */
export async function demoReminder(ctx: AppContext): Promise<string[] | null> {
  const owner = await ctx.db
    .selectFrom('users')
    .select('id')
    .where('email', '=', DEMO_PEOPLE.owner.email)
    .executeTakeFirst();
  if (!owner) return null;
  const key = await ctx.db
    .selectFrom('api_tokens')
    .select('token_hint')
    .where('created_by', '=', owner.id)
    .where('name', '=', DEMO_KEY_NAME)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
  const another = `make one at ${ctx.config.webUrl}/dashboard/api-tokens (signed in as the owner, test data)`;
  // The demo app's client id, redirect URI and install links, as the first start printed them.
  const person = (email: string) =>
    ctx.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
  const developer = await person(DEMO_PEOPLE.developer.email);
  const reviewer = await person(DEMO_PEOPLE.reviewer.email);
  const app = developer
    ? await demoAppReminder(ctx, { developer: developer.id, reviewer: reviewer?.id ?? null })
    : [];
  return [
    ...demoLines(
      ctx,
      key
        ? `${key.token_hint}   (its secret was printed on the first start only; lost it? ${another})`
        : another,
    ),
    ...app,
  ];
}

/** Seeds the demo on an empty database; does nothing when anyone has signed up already. */
export async function seedDemo(ctx: AppContext): Promise<DemoSeed | null> {
  const anyone = await ctx.db.selectFrom('users').select('id').limit(1).executeTakeFirst();
  if (anyone) return null;

  const people: Record<string, string> = {};
  for (const [key, person] of Object.entries(DEMO_PEOPLE)) {
    people[key] = (await signUp(ctx, { ...person, password: DEMO_PASSWORD }, { verified: true })).id;
  }
  // This account, and no other with its e-mail, is the demo's reviewer (users.ts isReviewer).
  await ctx.db
    .updateTable('users')
    .set({ demo_reviewer: true })
    .where('id', '=', people.reviewer as string)
    .execute();
  const ownerId = people.owner as string;
  const company = await createCompany(ctx, ownerId, { name: 'Demo Logistics' });
  await goLive(ctx, ownerId, company.id);
  const merchant = await createCustomerAccount(ctx, ownerId, company.id, { name: 'Acme Store' });
  await addMember(ctx, ownerId, company.id, {
    email: DEMO_PEOPLE.merchant.email,
    role: 'merchant_admin',
    customer_account_id: merchant.id,
  });

  const access: TenantAccess = {
    tenantId: company.id,
    customerAccountId: null,
    livemode: true,
    scopes: new Set(SCOPES),
    installationId: null,
    userId: ownerId,
    actor: ownerId,
  };
  const base = {
    currency: 'EUR',
    parcels: [{ weight_grams: 1200, length_mm: 300, width_mm: 200, height_mm: 100 }],
  };
  await createShipment(ctx, access, {
    ...base,
    recipient_name: 'Ada Lovelace',
    recipient_email: 'ada@example.com',
    external_ref: 'ORDER-1001',
    status: 'draft',
  });
  const cod = await createShipment(ctx, access, {
    ...base,
    recipient_name: 'Grace Hopper',
    recipient_email: 'grace@example.com',
    customer_account_id: merchant.id,
    payment_mode: 'cod',
    cod_amount_minor: 4599,
    external_ref: 'ACME-77',
  });
  await moveShipment(ctx, access, cod.id, { status: 'picked_up' });
  await moveShipment(ctx, access, cod.id, { status: 'in_transit' });
  await createShipment(ctx, { ...access, livemode: false }, { ...base, recipient_name: 'Test Recipient' });
  // Test shipments for an AI agent to find (agents connect in test mode by default): "where is order 1042?"
  const testAccess = { ...access, livemode: false };
  const order1042 = await createShipment(ctx, testAccess, {
    ...base,
    recipient_name: 'Katherine Johnson',
    recipient_email: 'katherine@example.com',
    external_ref: '1042',
  });
  await moveShipment(ctx, testAccess, order1042.id, { status: 'picked_up' });
  await moveShipment(ctx, testAccess, order1042.id, { status: 'in_transit' });
  const order1043 = await createShipment(ctx, testAccess, {
    ...base,
    recipient_name: 'Dorothy Vaughan',
    external_ref: '1043',
  });
  await moveShipment(ctx, testAccess, order1043.id, { status: 'picked_up' });
  await moveShipment(ctx, testAccess, order1043.id, { status: 'exception', exception_reason: 'damaged' });
  // For the tour's `npx waybill listen`: a test key, shown once here like any new key.
  const testKey = await createApiToken(ctx, ownerId, company.id, {
    name: DEMO_KEY_NAME,
    mode: 'test',
    scopes: [...SCOPES],
  });

  const seed: DemoSeed = {
    tenantId: company.id,
    customerAccountId: merchant.id,
    lines: demoLines(ctx, `${testKey.token}   (WAYBILL_API_KEY=... npx waybill listen)`),
  };
  for (const extend of demoExtensions) await extend(ctx, seed, people);
  return seed;
}
