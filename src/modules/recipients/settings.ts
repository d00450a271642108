import type { Static } from 'typebox';
import type { AppContext } from '../../context.ts';
import type { Db } from '../../db/database.ts';
import { type Branding, type BrandingInput, brandingColumns } from './branding.ts';
import { MILESTONES, type Milestone } from './milestones.ts';
import type { BrandingSchema, RecipientNotificationsSchema } from './schemas.ts';

export interface NotificationSettings {
  enabled: boolean;
  events: Milestone[];
}

export interface RecipientSettingsInput {
  branding?: BrandingInput;
  recipient_notifications?: { enabled?: boolean; events?: Milestone[] };
}

export async function notificationSettingsOf(db: Db, tenantId: string): Promise<NotificationSettings> {
  const row = await db
    .selectFrom('recipient_settings')
    .select(['notifications_enabled', 'notification_events'])
    .where('tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) return { enabled: false, events: [] };
  const events = (
    typeof row.notification_events === 'string'
      ? JSON.parse(row.notification_events)
      : row.notification_events
  ) as Milestone[];
  return { enabled: row.notifications_enabled, events: MILESTONES.filter((m) => events.includes(m)) };
}

/**
 * Checks the change whole (a low-contrast accent is 422) and gives back what to write: called
 * before anything of the PATCH is written, so a refusal writes nothing.
 */
export function prepareRecipientSettings(input: RecipientSettingsInput) {
  const columns: Record<string, unknown> = input.branding ? brandingColumns(input.branding) : {};
  const notifications = input.recipient_notifications;
  if (notifications?.enabled !== undefined) columns.notifications_enabled = notifications.enabled;
  if (notifications?.events !== undefined)
    columns.notification_events = JSON.stringify(MILESTONES.filter((m) => notifications.events?.includes(m)));
  return columns;
}

export async function applyRecipientSettings(
  ctx: AppContext,
  tenantId: string,
  columns: ReturnType<typeof prepareRecipientSettings>,
): Promise<void> {
  if (Object.keys(columns).length === 0) return;
  const now = ctx.clock.now();
  await ctx.db
    .insertInto('recipient_settings')
    .values({ tenant_id: tenantId, ...columns, updated_at: now })
    .onConflict((oc) => oc.column('tenant_id').doUpdateSet({ ...columns, updated_at: now }))
    .execute();
}

/** The settings as the API shows them, beside the company's own fields. */
export async function presentRecipientSettings(
  db: Db,
  tenantId: string,
): Promise<{
  branding: Static<typeof BrandingSchema>;
  recipient_notifications: Static<typeof RecipientNotificationsSchema>;
}> {
  const [row, logo, notifications] = await Promise.all([
    db
      .selectFrom('recipient_settings')
      .select(['display_name', 'accent_color', 'support_url'])
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst(),
    db
      .selectFrom('company_logos')
      .select(['content_type', 'created_at'])
      .where('tenant_id', '=', tenantId)
      .executeTakeFirst(),
    notificationSettingsOf(db, tenantId),
  ]);
  const branding: Omit<Branding, 'logo'> = {
    display_name: row?.display_name ?? null,
    accent_color: row?.accent_color ?? null,
    support_url: row?.support_url ?? null,
  };
  return {
    branding: {
      ...branding,
      logo: logo ? { content_type: logo.content_type, updated_at: logo.created_at.toISOString() } : null,
    },
    recipient_notifications: notifications,
  };
}
