/**
 * The App Store's search and sort with 5,000 published apps (issue 33), on both engines:
 *   npm run bench:store                                     (PGlite, and PostgreSQL when it answers)
 *   WAYBILL_BENCH_DATABASE_URL=postgres://... npm run bench:store
 * Each engine: a whole Waybill listening on 127.0.0.1, 5,000 listings in English and Spanish with
 * ratings and installation counts; sequential GET /v1/store/apps requests (a person's token) per
 * scenario, p50 and p99 of the whole HTTP answer. The peer, measured in the same run on the same
 * rows: the search the store did before (a substring scan, `ILIKE '%word%'` over name, tagline and
 * description) as one SQL query, beside the full-text query as one SQL query.
 */
import { sql } from 'kysely';
import pino from 'pino';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { openDatabase } from '../src/db/database.ts';
import { migrateToLatest } from '../src/db/migrate.ts';
import { systemClock } from '../src/lib/clock.ts';
import { newId } from '../src/lib/ids.ts';
import { searchDocument, searchQuery } from '../src/modules/store/index.ts';
import { buildContext } from '../src/services.ts';
import { BENCH_SECRET_KEY, distributeOnCitus, throwawaySchema } from './fixtures.ts';

const APPS = Number(process.env.BENCH_STORE_APPS ?? 5000);
const REQUESTS = Number(process.env.BENCH_STORE_REQUESTS ?? 150);
const postgresUrl = process.env.WAYBILL_BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/bench';

const EN = [
  'label',
  'printer',
  'returns',
  'invoice',
  'carrier',
  'parcel',
  'tracking',
  'warehouse',
  'courier',
  'customs',
  'pickup',
  'delivery',
  'route',
  'inventory',
  'refund',
  'notification',
  'report',
  'barcode',
  'pallet',
  'freight',
  'marketplace',
  'order',
  'customer',
  'survey',
  'insurance',
  'locker',
  'dispatch',
];
const ES = [
  'etiqueta',
  'impresora',
  'devolución',
  'factura',
  'transportista',
  'paquete',
  'seguimiento',
  'almacén',
  'mensajero',
  'aduana',
  'recogida',
  'envío',
  'ruta',
  'inventario',
  'reembolso',
  'aviso',
  'informe',
  'código',
  'palé',
  'carga',
  'pedido',
  'cliente',
  'encuesta',
  'seguro',
  'taquilla',
  'reparto',
];
/** Product words, each in about one listing in 150: what a search for a feature or a brand meets. */
const RARE = Array.from({ length: 1500 }, (_, i) => `zorb${i.toString(36)}`);
const CATEGORIES = [
  'accounting',
  'analytics',
  'customer_service',
  'fulfilment',
  'marketplaces',
  'notifications',
  'shipping',
  'productivity',
];

let seed = 42;
function random(): number {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
}
const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
const words = (list: readonly string[], n: number) => Array.from({ length: n }, () => pick(list)).join(' ');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  return `p50 ${percentile(sorted, 50).toFixed(2)} ms  p99 ${percentile(sorted, 99).toFixed(2)} ms`;
}

async function timed(n: number, run: (i: number) => Promise<void>): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await run(i);
    samples.push(performance.now() - started);
  }
  return samples;
}

async function benchEngine(engineLabel: string, databaseUrl: string, schema?: string): Promise<void> {
  const config = loadConfig({
    PORT: '0',
    WAYBILL_DATABASE_URL: databaseUrl,
    WAYBILL_SECRET_KEY: BENCH_SECRET_KEY,
    WAYBILL_DEMO: '0',
  });
  const database = await openDatabase(config, schema ? { schema, poolSize: 10 } : {});
  await migrateToLatest(database.db);
  const label = await distributeOnCitus(database, engineLabel);
  const ctx = buildContext({ config, database, clock: systemClock, logger: pino({ level: 'warn' }) });
  const app = await buildApp(ctx);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  try {
    const signup = await fetch(`${address}/v1/auth/signup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.test', password: 'correct horse battery', name: 'Bench' }),
    });
    const developerId = ((await signup.json()) as { id: string }).id;
    const session = await fetch(`${address}/v1/auth/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.test', password: 'correct horse battery' }),
    });
    const token = ((await session.json()) as { token: string }).token;

    const seeded = performance.now();
    const now = Date.now();
    for (let start = 0; start < APPS; start += 500) {
      const batch = Array.from({ length: Math.min(500, APPS - start) }, (_, k) => {
        const i = start + k;
        return { id: newId('app'), i, at: new Date(now - (APPS - i) * 60_000) };
      });
      await ctx.db
        .insertInto('apps')
        .values(
          batch.map(({ id, i, at }) => ({
            id,
            developer_id: developerId,
            name: `${pick(EN)} ${pick(EN)} ${i}`,
            description: words(EN, 12),
            homepage_url: null,
            privacy_url: null,
            support_url: null,
            redirect_uris: '["https://example.com/cb"]',
            scopes: '["shipments:read"]',
            kind: 'confidential',
            client_secret_hash: null,
            events_url: null,
            events_secret_sealed: 'unused',
            events_previous_secret_sealed: null,
            events_previous_secret_expires_at: null,
            status: 'published',
            created_at: at,
            updated_at: at,
          })),
        )
        .execute();
      await ctx.db
        .insertInto('app_submissions')
        .values(
          batch.map(({ id, at }) => ({
            id: `sub_bench${id}`,
            app_id: id,
            submitted_by: developerId,
            status: 'approved' as const,
            updates_published_app: false,
            listing: '{}',
            note: null,
            app_snapshot: '{}',
            events_url: null,
            checks: '[]',
            media: '{"icon": null, "screenshots": []}',
            reviewer_id: null,
            reviewer_note: null,
            created_at: at,
            updated_at: at,
            started_at: at,
            decided_at: at,
          })),
        )
        .execute();
      await ctx.db
        .insertInto('store_listings')
        .values(
          batch.map(({ id, at }) => ({
            app_id: id,
            submission_id: `sub_bench${id}`,
            tagline: words(EN, 5),
            description_en: `${words(EN, 40)} ${words(RARE, 2)}`,
            description_es: `${words(ES, 40)} ${words(RARE, 2)}`,
            category: pick(CATEGORIES),
            app_url: 'https://example.com/start',
            scope_justifications: '[]',
            published_at: at,
            updated_at: at,
            icon: null,
            screenshots: '[]',
          })),
        )
        .execute();
      await ctx.db
        .insertInto('app_store_stats')
        .values(
          batch.map(({ id }) => {
            const counts = [1, 2, 3, 4, 5].map(() => Math.floor(random() * 20));
            return {
              app_id: id,
              install_count: Math.floor(random() ** 3 * 3000),
              review_count: counts.reduce((a, b) => a + b, 0),
              rating_sum: counts.reduce((a, c, k) => a + c * (k + 1), 0),
              rating_1: counts[0],
              rating_2: counts[1],
              rating_3: counts[2],
              rating_4: counts[3],
              rating_5: counts[4],
              rating_avg:
                counts.reduce((a, c, k) => a + c * (k + 1), 0) /
                Math.max(
                  1,
                  counts.reduce((a, b) => a + b, 0),
                ),
            };
          }),
        )
        .execute();
    }
    const column = (name: string) => sql.ref(`store_listings.${name}`);
    await sql`UPDATE store_listings SET
        search_en = ${searchDocument('en', { name: sql.ref('apps.name'), tagline: column('tagline'), description: column('description_en') })},
        search_es = ${searchDocument('es', { name: sql.ref('apps.name'), tagline: column('tagline'), description: column('description_es') })}
      FROM apps WHERE apps.id = store_listings.app_id`.execute(ctx.db);
    await sql`ANALYZE`.execute(ctx.db);
    console.log(
      `\n${label}: ${APPS} published apps seeded in ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
    );

    const scenarios: Array<[string, (i: number) => string]> = [
      ['newest, first page', () => ''],
      ['search en, one word (relevance)', (i) => `?q=${EN[i % EN.length]}`],
      [
        'search es, one word, accents folded',
        (i) => `?lang=es&q=${encodeURIComponent(ES[i % ES.length] as string)}`,
      ],
      ['search en, a rare word (~7 matches)', (i) => `?q=${RARE[(i * 37) % RARE.length]}`],
      [
        'search en, two words + category',
        (i) =>
          `?q=${EN[i % EN.length]}%20${EN[(i * 7) % EN.length]}&category=${CATEGORIES[i % CATEGORIES.length]}`,
      ],
      ['sort by rating', () => '?sort=rating'],
      ['sort by installs, category', (i) => `?sort=installs&category=${CATEGORIES[i % CATEGORIES.length]}`],
      ['search en sorted by rating, page 3', (i) => `?q=${EN[i % EN.length]}&sort=rating&cursor=o40`],
    ];
    for (const [name, query] of scenarios) {
      await fetch(`${address}/v1/store/apps${query(0)}`, {
        headers: { authorization: `Bearer ${token}` },
      }).then((r) => r.arrayBuffer());
      const samples = await timed(REQUESTS, async (i) => {
        const response = await fetch(`${address}/v1/store/apps${query(i)}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        if (response.status !== 200) throw new Error(`${name}: ${response.status} ${await response.text()}`);
        await response.arrayBuffer();
      });
      console.log(`  HTTP ${name.padEnd(40)} ${summary(samples)}`);
    }

    // The peer: the same word found by a substring scan, against the full-text query, as SQL alone,
    // for a word in most listings and for a rare one.
    const peer = (word: (i: number) => string) =>
      timed(REQUESTS, async (i) => {
        const pattern = `%${word(i)}%`;
        await sql`SELECT apps.id FROM store_listings JOIN apps ON apps.id = store_listings.app_id
        WHERE apps.status = 'published' AND (apps.name ILIKE ${pattern} OR store_listings.tagline ILIKE ${pattern}
          OR store_listings.description_en ILIKE ${pattern})
        ORDER BY apps.created_at DESC LIMIT 21`.execute(ctx.db);
      });
    const fullText = (word: (i: number) => string) =>
      timed(REQUESTS, async (i) => {
        const query = searchQuery('en', word(i));
        await sql`SELECT apps.id FROM store_listings JOIN apps ON apps.id = store_listings.app_id
        WHERE apps.status = 'published' AND store_listings.search_en @@ ${query}
        ORDER BY ts_rank(store_listings.search_en, ${query}) DESC LIMIT 21`.execute(ctx.db);
      });
    const common = (i: number) => EN[i % EN.length] as string;
    const rare = (i: number) => RARE[(i * 37) % RARE.length] as string;
    console.log(`  SQL  peer: substring scan (ILIKE), common word  ${summary(await peer(common))}`);
    console.log(`  SQL  full text (GIN, ranked), common word       ${summary(await fullText(common))}`);
    console.log(`  SQL  peer: substring scan (ILIKE), rare word    ${summary(await peer(rare))}`);
    console.log(`  SQL  full text (GIN, ranked), rare word         ${summary(await fullText(rare))}`);
  } finally {
    await app.close();
    await database.close();
  }
}

console.log(`Store search benchmark: ${APPS} apps, ${REQUESTS} sequential requests per scenario`);
await benchEngine('PGlite (embedded)', 'memory:');
let schema: Awaited<ReturnType<typeof throwawaySchema>> | null = null;
try {
  schema = await throwawaySchema(postgresUrl, 'bench_store');
} catch (error) {
  console.log(`\nPostgreSQL left out: ${postgresUrl} does not answer (${(error as Error).message})`);
}
if (schema) {
  try {
    await benchEngine('PostgreSQL', postgresUrl, schema.name);
  } finally {
    await schema.drop();
  }
}
