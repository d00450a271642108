import { DAY, HOUR, SECOND } from '../../lib/clock.ts';

/** Spec section 8: authorization code 60 s, access token 1 h, refresh token 30 days. */
export const CODE_LIFETIME_MS = 60 * SECOND;
export const ACCESS_TOKEN_LIFETIME_MS = HOUR;
export const REFRESH_TOKEN_LIFETIME_MS = 30 * DAY;
