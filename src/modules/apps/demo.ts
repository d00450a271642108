import type { AppContext } from '../../context.ts';
import type { DemoSeed } from '../../lib/demo.ts';
import { createApp } from './service.ts';

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
    name: 'Demo Carrier Sync',
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
