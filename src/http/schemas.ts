import { type TSchema, Type } from 'typebox';
import { MAX_LIMIT } from '../lib/paging.ts';

/** Shared pieces of route schemas. Every string has a maximum length. */
export const Id = (maxLength = 64) => Type.String({ minLength: 1, maxLength });

/** An id Waybill made (CONTRACT.md, Conventions: a prefix, then base62), as answers and messages carry it. */
export const PrefixedId = (prefix: string, description: string) =>
  Type.String({ pattern: `^${prefix}_[0-9A-Za-z]+$`, description });

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'Problem', additionalProperties: true, description: 'RFC 9457 problem details with a stable code' },
);

export const PageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: 20 })),
    cursor: Type.Optional(Type.String({ maxLength: 512 })),
  },
  { additionalProperties: false },
);

export const Page = <T extends TSchema>(item: T) =>
  Type.Object({ data: Type.Array(item), next_cursor: Type.Union([Type.String(), Type.Null()]) });

export const Timestamp = Type.String({ format: 'date-time' });
export const Nullable = <T extends TSchema>(schema: T, options: { description?: string } = {}) =>
  Type.Union([schema, Type.Null()], options);

/** Standard error answers for a route, referenced from the OpenAPI document. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, { $ref: 'Problem#' }]));
