import type { Random } from './random.ts';

/** The ids and values of the fixtures, so that generated requests reach past the not-found checks. */
export interface Known {
  ids: string[];
  tenantIds: string[];
  urls: string[];
  eventTypes: string[];
  cursors: string[];
}

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Cursors that are nearly right: out-of-range times, odd ids, wrong shapes. */
export const HOSTILE_CURSORS = [
  base64url(['2026-01-01T00:00:00.000Z', 'shp_\u0000']),
  base64url(['-100000-01-01T00:00:00.000Z', 'x']),
  base64url(['+275760-09-13T00:00:00.000Z', 'x']),
  base64url(['0000-01-01T00:00:00.000Z', 'x']),
  base64url(['9999-12-31T23:59:59.999Z', 'zzzz']),
  base64url(['2026-02-31T00:00:00.000Z', 'x']),
  base64url(['2026-01-01T00:00:00.000Z', 'x'.repeat(500)]),
  base64url(['2026-01-01T00:00:00.000Z']),
  base64url({ a: 1 }),
  base64url([null, null]),
  base64url('\ud800'),
  Buffer.from('\u0000\u0001').toString('base64url'),
  'not a cursor',
  '====',
  'A'.repeat(600),
];

/** Strings no schema expects: control characters, broken UTF-16, odd Unicode, injections, sizes. */
export function hostileString(random: Random): string {
  return random.weighted<() => string>([
    [3, () => `a\u0000b`],
    [2, () => String.fromCharCode(random.int(0, 31))],
    [1, () => '\u007f\u0085\u009f'],
    [3, () => (random.chance(0.5) ? '\ud800' : 'x\udfff')],
    [1, () => '\udc00\ud800'],
    [2, () => '\ufeff\u202etxt.exe\u200b\u200d'],
    [2, () => 'e\u0301\u0301\u0301 ﬀ Ｆｕｌｌ 𝕏 📦👩‍👩‍👧'],
    [1, () => '\uffff\ufffe\ufffd'],
    [2, () => "' OR 1=1 --; DROP TABLE users; \\"],
    [2, () => '<script>alert(1)</script>&amp;"\''],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a template injection, on purpose.
    [1, () => '${{7*7}}{{constructor}}__proto__'],
    [2, () => '%00%zz%ff%c0%af/../..%2f'],
    [2, () => 'x'.repeat(random.pick([65, 101, 201, 256, 1001, 5000, 70_000]))],
    [1, () => '\n'.repeat(50)],
    [1, () => ' '],
    [2, () => ''],
    [1, () => '-1'],
    [1, () => '1e309'],
    [1, () => 'null'],
    [1, () => 'true'],
    [1, () => 'http://169.254.169.254/latest/meta-data'],
    [1, () => 'javascript:alert(1)'],
    [1, () => 'https://[::169.254.169.254]:65536/x'],
    [1, () => random.pick(HOSTILE_CURSORS)],
  ])();
}

/** Anything at all, of any JSON type. */
export function hostileValue(random: Random, depth = 0): unknown {
  return random.weighted<() => unknown>([
    [6, () => hostileString(random)],
    [
      1,
      () => random.pick([0, -1, -0, 1.5, 2 ** 31, 2 ** 53, -(2 ** 63), 1e21, 1e308, Number.MAX_SAFE_INTEGER]),
    ],
    [1, () => random.pick([true, false])],
    [1, () => null],
    [
      1,
      () =>
        depth > 3 ? [] : Array.from({ length: random.int(0, 3) }, () => hostileValue(random, depth + 1)),
    ],
    [1, () => (depth > 3 ? {} : { [hostileString(random).slice(0, 20)]: hostileValue(random, depth + 1) })],
    [1, () => nest(random.int(20, 40))],
  ])();
}

function nest(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = i % 2 ? [value] : { a: value };
  return value;
}

// biome-ignore lint/suspicious/noExplicitAny: JSON schemas from the OpenAPI document are read loosely.
export type Schema = any;

/** A string that fits the schema's length, from plain and odd (but storable) characters. */
function plausibleString(random: Random, schema: Schema): string {
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 40, 5000);
  const length = random.chance(0.2) ? max : random.chance(0.1) ? min : random.int(min, Math.min(max, 40));
  const alphabet = random.pick([
    'abcdefghijklmnopqrstuvwxyz ',
    'AZaz09_-.',
    'éüß漢字📦\u200b\u0301',
    '\'"<>&%;\\',
  ]);
  const letters = [...alphabet];
  let out = '';
  while ([...out].length < length) out += random.pick(letters);
  return [...out].slice(0, length).join('') || (min > 0 ? 'x'.repeat(min) : '');
}

/**
 * Values that fit the schema, edge values included (so requests go deep), with a hostile value in
 * place of any one with the probability `hostility`.
 */
export function valueFor(
  random: Random,
  schema: Schema,
  known: Known,
  hostility: number,
  name = '',
  depth = 0,
): unknown {
  if (!schema || random.chance(hostility) || depth > 6) return hostileValue(random);
  const choices = schema.anyOf ?? schema.oneOf;
  if (choices) return valueFor(random, random.pick(choices), known, hostility, name, depth + 1);
  if ('const' in schema) return schema.const;
  if (schema.enum) return random.pick(schema.enum);
  const type = Array.isArray(schema.type) ? random.pick(schema.type) : schema.type;
  switch (type) {
    case 'object': {
      const object: Record<string, unknown> = {};
      const required = new Set<string>(schema.required ?? []);
      for (const [key, child] of Object.entries<Schema>(schema.properties ?? {})) {
        if (required.has(key) ? random.chance(0.95) : random.chance(0.5)) {
          object[key] = valueFor(random, child, known, hostility, key, depth + 1);
        }
      }
      if (random.chance(hostility / 2)) object[hostileString(random).slice(0, 30)] = hostileValue(random);
      return object;
    }
    case 'array': {
      const max = Math.min(schema.maxItems ?? 3, 60);
      const count = random.chance(hostility)
        ? max + random.int(0, 1)
        : random.int(schema.minItems ?? 0, Math.min(max, 3));
      return Array.from({ length: count }, () =>
        valueFor(random, schema.items, known, hostility, name, depth + 1),
      );
    }
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -(2 ** 31);
      const max = schema.maximum ?? 2 ** 31;
      return random.weighted<number>([
        [4, random.int(Math.max(min, -1000), Math.min(max, 100_000))],
        [1, min],
        [1, max],
        [hostility * 4, random.pick([2 ** 31, 2 ** 53, -(2 ** 31) - 1, 0.5, 1e15])],
      ]);
    }
    case 'boolean':
      return random.chance(0.5);
    case 'null':
      return null;
    default:
      return stringFor(random, schema, known, hostility, name);
  }
}

function stringFor(random: Random, schema: Schema, known: Known, hostility: number, name: string): string {
  if (random.chance(hostility)) return hostileString(random);
  if (/(^|_)id$/.test(name) && known.ids.length > 0 && random.chance(0.7)) return random.pick(known.ids);
  if (name === 'tenant_id' && random.chance(0.8)) return random.pick(known.tenantIds);
  if (name === 'cursor')
    return random.chance(0.5) ? random.pick(known.cursors) : random.pick(HOSTILE_CURSORS);
  if (schema.format === 'email' || name === 'email') {
    return `${plausibleString(random, { minLength: 1, maxLength: 12 }).replace(/[^a-z0-9]/gi, '') || 'p'}${random.int(0, 1e9)}@example.test`;
  }
  if (schema.format === 'uri' || /url|uri/.test(name)) return random.pick(known.urls);
  if (/event_type/.test(name) && known.eventTypes.length > 0) return random.pick(known.eventTypes);
  if (schema.format === 'date-time')
    return random.pick(['2026-11-21T12:00:00.000Z', '+275760-09-13T00:00:00Z']);
  if (name === 'currency') return random.pick(['EUR', 'USD', 'JPY', 'XXX', 'eur']);
  if (name === 'password')
    return random.chance(0.8) ? 'correct horse battery' : plausibleString(random, schema);
  if (schema.pattern && random.chance(0.5))
    return random.pick(['aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', '-', '']);
  return plausibleString(random, schema);
}
