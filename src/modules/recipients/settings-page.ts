import { readFileSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../../context.ts';
import { AppError } from '../../lib/errors.ts';
import type { DashboardView } from '../../web/dashboard.ts';
import { type FieldError, fieldErrorsOf, fieldMessage, invalidAttrs } from '../../web/fields.ts';
import { html } from '../../web/html.ts';
import { csrfField } from '../../web/layout.ts';
import { checked, type Form, listField, textField } from '../../web/pages/common.ts';
import { formPost, pageGet } from '../../web/pages/page-routes.ts';
import { getCompany, requireRole } from '../accounts/companies.ts';
import { managesMembers } from '../accounts/roles.ts';
import { DEFAULT_ACCENT } from './branding.ts';
import { MILESTONES, type Milestone } from './milestones.ts';
import { applyRecipientSettings, prepareRecipientSettings, presentRecipientSettings } from './settings.ts';

const PATH = '/dashboard/settings/branding';
const script = readFileSync(new URL('../../web/static/branding-preview.js', import.meta.url), 'utf8');

const MILESTONE_LABELS: Record<Milestone, string> = {
  picked_up: 'Picked up',
  out_for_delivery: 'Out for delivery',
  delivered: 'Delivered',
  exception: 'A problem with the delivery',
  delayed: 'Delayed (a later estimate)',
};

async function brandingForm(ctx: AppContext, view: DashboardView, typed?: Form, errors: FieldError[] = []) {
  const [company, settings] = await Promise.all([
    getCompany(ctx, view.tenantId),
    presentRecipientSettings(ctx.db, view.tenantId),
  ]);
  const field = (name: string, stored: string | null) =>
    typed ? ((Array.isArray(typed[name]) ? typed[name][0] : typed[name]) ?? '') : (stored ?? '');
  const accent = field('accent_color', settings.branding.accent_color) || DEFAULT_ACCENT;
  const events = typed ? listField(typed, 'events') : settings.recipient_notifications.events;
  const enabled = typed ? typed.enabled === 'on' : settings.recipient_notifications.enabled;
  return {
    title: 'Branding',
    path: PATH,
    body: html`<h1>Branding for recipients</h1>
<p class="muted">What the person waiting for a parcel sees on the tracking page and in the e-mails.</p>
<section class="card">
<h2>Preview</h2>
<div class="brand-band" id="preview-band" data-accent="${accent}" data-fallback="${company.name}"><p class="brand-name" id="preview-name">${field('display_name', settings.branding.display_name) || company.name}</p></div>
<p><strong>Out for delivery</strong></p>
</section>
<form class="stack card" method="post" action="${PATH}">
${csrfField(view.csrf)}
<label for="display_name">Display name <input id="display_name" name="display_name" maxlength="100" value="${field('display_name', settings.branding.display_name)}" placeholder="${company.name}"${invalidAttrs(errors, 'display_name')}>${fieldMessage(errors, 'display_name')}</label>
<label for="accent_color">Accent colour <input id="accent_color" name="accent_color" type="color" value="${accent}"${invalidAttrs(errors, 'accent_color')}>${fieldMessage(errors, 'accent_color')}</label>
<label for="support_url">Support link <input id="support_url" name="support_url" type="url" maxlength="500" value="${field('support_url', settings.branding.support_url)}" placeholder="https://"${invalidAttrs(errors, 'support_url')}>${fieldMessage(errors, 'support_url')}</label>
<fieldset><legend>E-mail the recipient at</legend>
<label class="check"><input type="checkbox" name="enabled"${checked(enabled)}> Send e-mails to recipients</label>
${MILESTONES.map((m) => html`<label class="check"><input type="checkbox" name="events" value="${m}"${checked(events.includes(m))}> ${MILESTONE_LABELS[m]}</label>`)}
</fieldset>
<button type="submit">Save branding</button>
</form>
<script src="/static/branding-preview.js"></script>`,
  };
}

/** The dashboard's branding settings (owners and admins): the same rules as PATCH /v1/companies/{id}. */
export function brandingSettingsPages(app: FastifyInstance, ctx: AppContext): void {
  app.get('/static/branding-preview.js', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').header('cache-control', 'public, max-age=300').send(script),
  );
  pageGet(app, ctx, PATH, async (view, { retry }) => {
    await requireRole(ctx, view.user.userId, view.tenantId, managesMembers);
    return retry ? brandingForm(ctx, view, retry.values, retry.errors) : brandingForm(ctx, view);
  });
  formPost(app, ctx, PATH, {
    async run(view, form) {
      await requireRole(ctx, view.user.userId, view.tenantId, managesMembers);
      const accent = textField(form, 'accent_color', 'Accent colour', 7);
      if (accent !== null && !/^#[0-9a-fA-F]{6}$/.test(accent)) {
        throw new AppError('validation.failed', 'The accent colour is #rrggbb', {
          errors: [{ path: '/branding/accent_color', message: 'must be #rrggbb' }],
        });
      }
      const support = textField(form, 'support_url', 'Support link', 500);
      if (support !== null && !/^https?:\/\/\S+$/.test(support)) {
        throw new AppError('validation.failed', 'The support link starts with https://', {
          errors: [{ path: '/branding/support_url', message: 'must be an http or https URL' }],
        });
      }
      const events = listField(form, 'events').filter((e): e is Milestone =>
        (MILESTONES as readonly string[]).includes(e),
      );
      const columns = prepareRecipientSettings({
        branding: {
          display_name: textField(form, 'display_name', 'Display name', 100),
          accent_color: accent,
          support_url: support,
        },
        recipient_notifications: { enabled: form.enabled === 'on', events },
      });
      await applyRecipientSettings(ctx, view.tenantId, columns);
      return { redirect: PATH, message: 'Branding saved.' };
    },
    retry: (view, form) => brandingForm(ctx, view, form),
    // A refusal goes back to the form, as typed, each error beside its field.
    back: () => PATH,
    fieldErrors: (error) =>
      fieldErrorsOf(error, {
        labels: { display_name: 'Display name', accent_color: 'Accent colour', support_url: 'Support link' },
      }),
    refused: 'The branding was not saved: see the form below.',
  });
}
