import type { FastifyReply } from 'fastify';
import type { Flash } from './flash.ts';
import { html, type SafeHtml } from './html.ts';

export interface LayoutOptions {
  title: string;
  /** The sidebar of the person's places (placesNav), for signed-in pages. */
  nav?: SafeHtml | null;
  /** The header's right side: the live/test switch and sign-out (headerTools). */
  tools?: SafeHtml | null;
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

/**
 * Every page's frame: one stylesheet, a viewport for phones, and two same-origin scripts (the
 * CSP allows no other): times in the viewer's zone, copy buttons; the pages work without them.
 */
export function layout(options: LayoutOptions, body: SafeHtml): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Waybill</title>
<link rel="stylesheet" href="/static/waybill.css">
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<script src="/static/local-time.js" defer></script>
<script src="/static/copy.js" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="/dashboard">Waybill</a>${options.tools ?? ''}</header>
<div class="shell${options.nav ? '' : ' bare'}">
${options.nav ? html`<nav class="side" aria-label="Places">${options.nav}</nav>` : ''}
<main id="main" tabindex="-1">
${flashBlock(options.flash)}
${body}
</main>
</div>
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

export interface PlaceLink {
  href: string;
  label: string;
  current?: boolean;
  /** A place's own pages, shown under it when it is the current one. */
  children?: PlaceLink[];
}

/** A place's group in the sidebar: "Company", "Developer", "Review". */
export interface PlaceGroup {
  heading: string;
  links: PlaceLink[];
}

function placeLink(link: PlaceLink): SafeHtml {
  const children = link.children?.length
    ? html`<ul>${link.children.map((c) => html`<li>${placeLink(c)}</li>`)}</ul>`
    : '';
  return html`<a href="${link.href}"${link.current ? html` aria-current="page"` : ''}>${link.label}</a>${children}`;
}

/**
 * The sidebar of every signed-in page, the same for the dashboard, the developer portal and the
 * review console: the person's places, grouped. With no groups given (an error page, a page that
 * does not know the person's places), the three entrances.
 */
export function placesNav(groups: PlaceGroup[] | null): SafeHtml {
  const shown = groups ?? [
    {
      heading: 'Places',
      links: [
        { href: '/dashboard', label: 'Dashboard' },
        { href: '/developer/apps', label: 'Developer portal' },
        { href: '/review', label: 'Review console' },
      ],
    },
  ];
  return html`${shown.map(
    (g) =>
      html`<section class="place"><h2 class="place-heading">${g.heading}</h2><ul>${g.links.map((l) => html`<li>${placeLink(l)}</li>`)}</ul></section>`,
  )}`;
}

/** The header's tools: the live/test switch (one control of two links) and sign-out. */
export function headerTools(
  csrf: string,
  mode?: { live: boolean; liveHref: string; testHref: string },
): SafeHtml {
  const modeSwitch = mode
    ? html`<div class="mode-switch" role="group" aria-label="Data shown"><a href="${mode.liveHref}"${mode.live ? html` aria-current="true"` : ''}>Live</a><a href="${mode.testHref}"${mode.live ? '' : html` aria-current="true"`}>Test</a></div>`
    : '';
  return html`<div class="tools">${modeSwitch}<form class="inline" method="post" action="/signout">${csrfField(csrf)}<button class="secondary small" type="submit">Sign out</button></form></div>`;
}
