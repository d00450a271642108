import { DAY, HOUR, SECOND } from '../../lib/clock.ts';

/** Spec section 8: authorization code 60 s, access token 1 h, refresh token 30 days. */
export const CODE_LIFETIME_MS = 60 * SECOND;
export const ACCESS_TOKEN_LIFETIME_MS = HOUR;
export const REFRESH_TOKEN_LIFETIME_MS = 30 * DAY;

/**
 * CONTRACT.md (Agents): a refresh token just used, presented again by its agent client within this
 * window, is answered with the pair its use minted instead of revoking the family (an agent
 * refreshing from two places at once). Apps of the developer portal have no such grace (spec 3.4).
 */
export const REFRESH_RACE_WINDOW_MS = 30 * SECOND;
