import { Type } from 'typebox';
import { Id, Nullable } from '../../../http/schemas.ts';

const strict = { additionalProperties: false } as const;

export const MediaRefSchema = Type.Object({
  name: Type.String({ description: 'Holds the content hash: the image at this name never changes' }),
  url: Type.String(),
});

export const MediaSetSchema = Type.Object(
  { icon: Nullable(MediaRefSchema), screenshots: Type.Array(MediaRefSchema) },
  { description: 'The listing images' },
);

export const MediaParams = Type.Object(
  { id: Id(64), name: Type.String({ minLength: 1, maxLength: 100 }) },
  strict,
);

export const RawImageBody = Type.Unknown({
  description: 'The image bytes (PNG or JPEG; the type is read from the bytes)',
});
