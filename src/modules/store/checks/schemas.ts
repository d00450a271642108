import { Type } from 'typebox';
import { Nullable } from '../../../http/schemas.ts';

export const CheckSchema = Type.Object(
  {
    name: Type.Union([
      Type.Literal('events_url_rejects_bad_signature'),
      Type.Literal('events_url_accepts_signed_test'),
      Type.Literal('scope_justifications_complete'),
      Type.Literal('listing_media_valid'),
    ]),
    passed: Type.Boolean(),
    detail: Type.Object(
      {
        summary: Type.String(),
        sent: Type.Optional(
          Type.Object({
            url: Type.String(),
            headers: Type.Record(Type.String(), Type.String()),
            body: Type.String(),
          }),
        ),
        received: Type.Optional(
          Type.Object({
            status_code: Nullable(Type.Integer()),
            duration_ms: Type.Integer(),
            body: Nullable(Type.String({ description: 'The first 4 KB of the answer' })),
            error: Nullable(Type.String()),
          }),
        ),
        scopes: Type.Optional(Type.Array(Type.String())),
        missing: Type.Optional(Type.Array(Type.Object({ scope: Type.String(), problem: Type.String() }))),
        media: Type.Optional(
          Type.Array(
            Type.Object({
              name: Type.String(),
              kind: Type.Union([Type.Literal('icon'), Type.Literal('screenshot')]),
              width: Type.Integer(),
              height: Type.Integer(),
              bytes: Type.Integer(),
            }),
          ),
        ),
        problems: Type.Optional(Type.Array(Type.String())),
      },
      { description: 'What was sent and what came back' },
    ),
  },
  { $id: 'Check' },
);
