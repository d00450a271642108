import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import { tokenPrefixOf } from '../../lib/ids.ts';
import type { Principal } from './access.ts';
import { resolveApiToken } from './api-tokens.ts';
import { findSession } from './users.ts';

export function registerAccountTokenResolvers(ctx: AppContext): void {
  ctx.tokenResolvers.set('ust_', async (c, secret) => {
    const session = await findSession(c, secret);
    return session ? { kind: 'user', ...session } : null;
  });
  ctx.tokenResolvers.set('sk_live_', resolveApiToken);
  ctx.tokenResolvers.set('sk_test_', resolveApiToken);
}

/** Turns a bearer secret into who is calling; an unknown, expired or revoked one is 401. */
export async function authenticateBearer(ctx: AppContext, secret: string): Promise<Principal> {
  const prefix = tokenPrefixOf(secret);
  const resolver = prefix ? ctx.tokenResolvers.get(prefix) : undefined;
  const principal = resolver && secret.length <= 200 ? await resolver(ctx, secret) : null;
  if (!principal) throw new AppError('auth.invalid_token');
  return principal;
}
