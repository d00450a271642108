import type { FastifyReply } from 'fastify';
import { html, type SafeHtml } from './html.ts';

export interface LayoutOptions {
  title: string;
  /** The navigation bar, for signed-in pages. */
  nav?: SafeHtml | null;
  flash?: { kind: 'ok' | 'error'; message: string } | null;
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
${options.flash ? html`<p class="flash ${options.flash.kind}" role="status">${options.flash.message}</p>` : ''}
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
