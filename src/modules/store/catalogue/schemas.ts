import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../../http/schemas.ts';
import { MediaRefSchema } from '../media/schemas.ts';

const strict = { additionalProperties: false } as const;

export const StoreAppParams = Type.Object({ id: Id(64) }, strict);

const Lang = Type.Union([Type.Literal('en'), Type.Literal('es')], { default: 'en' });

export const StoreListQuery = Type.Object(
  {
    lang: Type.Optional(Lang),
    category: Type.Optional(Type.String({ maxLength: 64 })),
    q: Type.Optional(
      Type.String({
        maxLength: 100,
        description:
          'Full text over name, tagline and description in `lang` (stemmed, accents folded; quotes, `or` and `-word` work), or part of the name',
      }),
    ),
    sort: Type.Optional(
      Type.Union(
        [Type.Literal('relevance'), Type.Literal('rating'), Type.Literal('installs'), Type.Literal('newest')],
        {
          description:
            '`relevance` (the default with `q`), `rating`, `installs` or `newest` (the default without)',
        },
      ),
    ),
    tenant_id: Type.Optional(
      Type.String({ maxLength: 64, description: 'The company `installed` is about (default: all of yours)' }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
    cursor: Type.Optional(Type.String({ maxLength: 512 })),
  },
  strict,
);

export const StoreAppQuery = Type.Object(
  { lang: Type.Optional(Lang), tenant_id: Type.Optional(Type.String({ maxLength: 64 })) },
  strict,
);

export const StoreAppSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    tagline: Type.String(),
    description: Type.String(),
    lang: Type.Union([Type.Literal('en'), Type.Literal('es')]),
    category: Type.String(),
    category_label: Type.String(),
    app_url: Type.String(),
    homepage_url: Nullable(Type.String()),
    privacy_url: Nullable(Type.String()),
    support_url: Nullable(Type.String()),
    scopes: Type.Array(
      Type.Object({ scope: Type.String(), description: Type.String(), justification: Type.String() }),
    ),
    installed: Type.Boolean(),
    published_at: Timestamp,
    icon_url: Nullable(Type.String()),
    screenshots: Type.Array(MediaRefSchema),
    rating_avg: Nullable(Type.Number({ description: 'Mean rating of the shown reviews, two decimals' })),
    review_count: Type.Integer(),
    rating_distribution: Type.Object({
      '1': Type.Integer(),
      '2': Type.Integer(),
      '3': Type.Integer(),
      '4': Type.Integer(),
      '5': Type.Integer(),
    }),
    installs: Type.Union([
      Type.Literal('<10'),
      Type.Literal('10+'),
      Type.Literal('100+'),
      Type.Literal('1000+'),
    ]),
  },
  { $id: 'StoreApp' },
);

export const CategoriesSchema = Type.Object({
  data: Type.Array(Type.Object({ id: Type.String(), en: Type.String(), es: Type.String() })),
});
