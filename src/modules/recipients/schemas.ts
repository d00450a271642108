import { Type } from 'typebox';
import { Nullable } from '../../http/schemas.ts';
import { CompanySchema } from '../accounts/schemas.ts';
import { MILESTONES } from './milestones.ts';

export const BrandingBody = Type.Object(
  {
    display_name: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
    accent_color: Type.Optional(
      Nullable(
        Type.String({
          pattern: '^#[0-9a-fA-F]{6}$',
          description: '#rrggbb; white or dark text on it must reach WCAG AA (4.5 to 1), else 422',
        }),
      ),
    ),
    support_url: Type.Optional(
      Nullable(Type.String({ format: 'uri', pattern: '^https?://', maxLength: 500 })),
    ),
  },
  { additionalProperties: false },
);

export const MilestoneName = Type.Enum(MILESTONES, { type: 'string' });

export const RecipientNotificationsBody = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    events: Type.Optional(Type.Array(MilestoneName, { uniqueItems: true, maxItems: MILESTONES.length })),
  },
  { additionalProperties: false },
);

export const BrandingSchema = Type.Object(
  {
    display_name: Nullable(Type.String(), {
      description: 'Shown on the page and in the e-mail; the company name when null',
    }),
    accent_color: Nullable(Type.String()),
    support_url: Nullable(Type.String()),
    logo: Nullable(
      Type.Object({ content_type: Type.String(), updated_at: Type.String({ format: 'date-time' }) }),
      { description: 'The uploaded logo (PUT .../branding/logo), or null' },
    ),
  },
  { additionalProperties: false },
);

export const RecipientNotificationsSchema = Type.Object(
  {
    enabled: Type.Boolean(),
    events: Type.Array(MilestoneName, { description: 'The milestones that send the recipient an e-mail' }),
  },
  { additionalProperties: false },
);

/** PATCH /v1/companies/{tenant_id}'s answer: the company with its recipient settings. */
export const CompanySettingsSchema = Type.Object(
  {
    ...CompanySchema.properties,
    branding: BrandingSchema,
    recipient_notifications: RecipientNotificationsSchema,
  },
  { $id: 'CompanySettings', description: 'A company with its settings' },
);
