import type { FastifyReply } from 'fastify';
import type { Flash } from './flash.ts';
import { html, type SafeHtml } from './html.ts';

export interface LayoutOptions {
  title: string;
  /** The navigation bar, for signed-in pages. */
  nav?: SafeHtml | null;
  flash?: Flash | null;
}

/** The one-time message on top of a page; a secret shown once below it, to copy now. */
export function flashBlock(flash: Flash | null | undefined): SafeHtml | '' {
  if (!flash) return '';
  const role = 'status';
  const secrets = flash.secrets ?? [];
  const secret = secrets.length
    ? html`<div class="secret-once"><p><strong>Copy it now.</strong> ${flash.note ?? ''}</p>${secrets.map(
        (s, i) =>
          html`<p><label for="secret-${i}">${s.label}</label><br><input class="copy secret" id="secret-${i}"${s.name ? html` name="${s.name}"` : ''} value="${s.value}" readonly></p>`,
      )}</div>`
    : '';
  return html`<div class="flash ${flash.kind}" role="${role}"><p>${flash.message}</p>${secret}</div>`;
}

/** Every page's frame: one stylesheet, a viewport for phones, no script. */
export function layout(options: LayoutOptions, body: SafeHtml): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Waybill</title>
<link rel="stylesheet" href="/static/waybill.css">
</head>
<body>
<header class="top"><a class="brand" href="/dashboard">Waybill</a>${options.nav ?? ''}</header>
<main>
${flashBlock(options.flash)}
${body}
</main>
</body>
</html>`;
}

export function sendPage(reply: FastifyReply, page: SafeHtml, status = 200): FastifyReply {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(page.value);
}

/**
 * The hidden CSRF field of a POST form. Check it with `preValidation: app.csrfProtection`, not
 * `onRequest`: the token travels in the form body, which is parsed only after onRequest.
 */
export function csrfField(token: string): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}
