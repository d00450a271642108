import { html } from '../../web/html.ts';
import type { Look } from './branding.ts';
import { type Language, WORDS } from './language.ts';
import type { Milestone } from './milestones.ts';

export interface MilestoneMail {
  subject: string;
  text: string;
  html: string;
  headers: Record<string, string>;
}

/**
 * The recipient's e-mail: the brand, one line about the milestone, the tracking link, and an
 * unsubscribe link that is also the RFC 8058 one-click address. It names nobody and holds no id:
 * the link's token is replaced by an erasure, and the unsubscribe token is random.
 */
export function milestoneMail(options: {
  language: Language;
  look: Look;
  milestone: Milestone;
  trackingUrl: string;
  unsubscribeUrl: string;
}): MilestoneMail {
  const words = WORDS[options.language];
  const { subject, line } = words.milestones[options.milestone];
  const { look } = options;
  const text = [
    look.name,
    '',
    line,
    '',
    `${words.trackLink}: ${options.trackingUrl}`,
    '',
    ...(look.supportUrl ? [`${words.help} ${look.supportUrl}`, ''] : []),
    `${words.unsubscribe}: ${options.unsubscribeUrl}`,
  ].join('\n');
  const body = html`<!doctype html>
<html lang="${options.language}"><body style="margin:0;font-family:system-ui,sans-serif;color:#1b1f24">
<div style="background:${look.accent};color:${look.onAccent};padding:12px 16px;font-weight:700">${look.name}</div>
<div style="padding:16px">
<p>${line}</p>
<p><a href="${options.trackingUrl}" style="display:inline-block;background:${look.accent};color:${look.onAccent};padding:10px 16px;border-radius:4px;text-decoration:none">${words.trackLink}</a></p>
${look.supportUrl ? html`<p><a href="${look.supportUrl}">${words.help}</a></p>` : ''}
<p style="font-size:12px;color:#5b6470"><a href="${options.unsubscribeUrl}" style="color:#5b6470">${words.unsubscribe}</a></p>
</div></body></html>`;
  return {
    subject: `${look.name}: ${subject}`,
    text,
    html: body.value,
    headers: {
      'List-Unsubscribe': `<${options.unsubscribeUrl}>`,
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    },
  };
}
