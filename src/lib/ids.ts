import { createHash, randomBytes, randomUUID } from 'node:crypto';

/** Prefixes of public identifiers (CONTRACT.md, Conventions). */
export type IdPrefix =
  | 'usr'
  | 'evr'
  | 'acct'
  | 'inst'
  | 'agc'
  | 'app'
  | 'shp'
  | 'chk'
  | 'sim'
  | 'evt'
  | 'we'
  | 'ins'
  | 'inm'
  | 'dlv'
  | 'sub'
  | 'prq'
  | 'tok'
  | 'ses'
  | 'mem'
  | 'att'
  | 'grt'
  | 'aud'
  | 'mail'
  | 'apv'
  | 'rev'
  | 'rnt';

/** Prefixes of secrets handed out once and stored only as hashes. */
export type SecretPrefix =
  | 'ust_'
  | 'sk_live_'
  | 'sk_test_'
  | 'atk_live_'
  | 'atk_test_'
  | 'atr_'
  | 'atc_'
  | 'aps_';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes drawn 4 KB at a time, each used once: one call into OpenSSL per hundred ids or so
// instead of one per id (a few per token request and per delivery; randomUUID pools the same way).
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let poolOffset = 0;

function randomByte(): number {
  if (poolOffset >= pool.length) {
    pool = randomBytes(POOL_BYTES);
    poolOffset = 0;
  }
  return pool[poolOffset++] as number;
}

/** Base62 of uniformly random bytes (rejection sampling keeps every character equally likely). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += ALPHABET[byte % 62];
  }
  return out;
}

/** Characters of an id's time part: milliseconds since 1970 in base62, enough until the year 8900. */
const TIME_CHARS = 8;

/**
 * `prefix_` + 22 base62 characters: the creation time in milliseconds (8), then 14 random (83 bits,
 * enough that ids are never guessed). Ids made later sort later, so a table's primary key and the
 * indexes that hold its ids (a delivery's attempts, an event's deliveries) grow at their right edge:
 * the pages being written stay few and in memory however long the history grows, where random
 * ids spread every insert over the whole index (issue 10: the embedded engine, with its small
 * buffer cache, lost 12% of its delivery rate as the log grew to 320,000 rows; decision 0020).
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${idTime(Date.now())}${randomBase62(22 - TIME_CHARS)}`;
}

/**
 * An id's time part: `ms` in base62, most significant first. The fan-out makes delivery ids in the
 * database with `waybill_id_time` (migration 0018), which must give the same characters.
 */
export function idTime(ms: number): string {
  let rest = Math.floor(ms);
  let stamp = '';
  for (let i = 0; i < TIME_CHARS; i++) {
    stamp = ALPHABET[rest % 62] + stamp;
    rest = Math.floor(rest / 62);
  }
  return stamp;
}

export function newTenantId(): string {
  return randomUUID();
}

/** A bearer secret: prefix + 43 base62 characters (256 bits of entropy). */
export function newSecret(prefix: SecretPrefix): string {
  return `${prefix}${randomBase62(43)}`;
}

/** Secrets are looked up by their SHA-256; the plain value is never stored. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url');
}

export function tokenPrefixOf(secret: string): SecretPrefix | null {
  for (const prefix of [
    'ust_',
    'sk_live_',
    'sk_test_',
    'atk_live_',
    'atk_test_',
    'atr_',
    'atc_',
    'aps_',
  ] as const) {
    if (secret.startsWith(prefix)) return prefix;
  }
  return null;
}
