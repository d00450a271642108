import { createHash, randomBytes } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import type { DemoSeed } from '../../lib/demo.ts';
import { getPerson } from '../accounts/users.ts';
import { type App, createApp, listApps } from './service.ts';

export const DEMO_APP_NAME = 'Demo Carrier Sync';

/**
 * The demo developer's app, so the OAuth flow can be tried at once with any client on port 8080.
 * Its secret is printed with the other demo lines: it is demo data, shown once like any secret.
 */
export async function seedDemoApp(
  ctx: AppContext,
  seed: DemoSeed,
  people: Record<string, string>,
): Promise<void> {
  const developerId = people.developer;
  if (!developerId) return;
  const app = await createApp(ctx, developerId, {
    name: DEMO_APP_NAME,
    description: 'Keeps a carrier account in step with your Waybill shipments (demo app)',
    homepage_url: 'https://carrier-sync.example',
    privacy_url: 'https://carrier-sync.example/privacy',
    support_url: 'https://carrier-sync.example/support',
    redirect_uris: ['http://localhost:8080/callback'],
    scopes: ['shipments:read', 'shipments:write', 'webhooks:write'],
    kind: 'confidential',
  });
  seed.lines.push(
    `  demo app          ${app.name}`,
    `  client id         ${app.client_id}`,
    `  client secret     ${app.client_secret ?? ''}  (shown once)`,
    `  redirect URI      ${app.redirect_uris[0] ?? ''}`,
    `  install link      ${app.install_url}`,
  );
}

/**
 * The authorization request the demo app's start page would make (the store demo prints it as
 * `install (demo)` on the first start): a fresh PKCE pair each time, so the link and its verifier
 * printed together always go together.
 */
export function demoInstallLink(ctx: AppContext, app: App): { link: string; verifier: string } {
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
 * On a restart: the demo app's lines of the first start again (the README's tour reads them), the
 * client secret by where to make another (Waybill keeps its hash; it was printed once), and the
 * `install (demo)` link with a new verifier when the store demo was seeded (its reviewer is one).
 * Empty when the developer has no demo app (deleted, or renamed).
 */
export async function demoAppReminder(
  ctx: AppContext,
  people: { developer: string; reviewer: string | null },
): Promise<string[]> {
  const app = (await listApps(ctx, people.developer, { limit: 100 })).data.find(
    (a) => a.name === DEMO_APP_NAME,
  );
  if (!app) return [];
  const lines = [
    `  demo app          ${app.name}`,
    `  client id         ${app.client_id}`,
    `  client secret     printed on the first start only; lost it? rotate it at ${ctx.config.webUrl}/developer/apps/${app.id} (signed in as the developer)`,
    `  redirect URI      ${app.redirect_uris[0] ?? ''}`,
    `  install link      ${app.install_url}`,
  ];
  if (people.reviewer && (await getPerson(ctx, people.reviewer)).is_reviewer) {
    const start = demoInstallLink(ctx, app);
    lines.push(`  install (demo)    ${start.link}`, `  code verifier     ${start.verifier}`);
  }
  return lines;
}
