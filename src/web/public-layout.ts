import type { FastifyReply } from 'fastify';
import { html, type SafeHtml } from './html.ts';

export interface PublicLayoutOptions {
  title: string;
  lang: string;
  /** Nonce of the one <style> element (the page's own accent colours). */
  styleNonce: string;
  /** CSS custom properties of the page, e.g. the brand's accent; values must be checked already. */
  styleVars?: Record<string, string>;
}

/**
 * The frame of the pages anyone may open without signing in (the recipient's tracking page): the
 * shared stylesheet, no navigation, noindex, and no link back into the dashboard.
 */
export function publicLayout(options: PublicLayoutOptions, body: SafeHtml): SafeHtml {
  const vars = Object.entries(options.styleVars ?? {})
    .map(([name, value]) => `--${name}:${value};`)
    .join('');
  return html`<!doctype html>
<html lang="${options.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<meta name="referrer" content="no-referrer">
<title>${options.title}</title>
<link rel="stylesheet" href="/static/waybill.css">
${vars ? html`<style nonce="${options.styleNonce}">body.public{${vars}}</style>` : ''}
</head>
<body class="public">
${body}
</body>
</html>`;
}

/**
 * Headers of a public page: not indexed, not framed, no Referer to the links it holds (the URL is
 * the key to the page), and a policy that lets only the page's own style element through.
 */
export function publicPageHeaders(styleNonce: string): Record<string, string> {
  return {
    'x-robots-tag': 'noindex, nofollow',
    'referrer-policy': 'no-referrer',
    'cache-control': 'no-store',
    'content-security-policy': `default-src 'none'; style-src 'self' 'nonce-${styleNonce}'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  };
}

/** Sends a public page with its headers. */
export function sendPublicPage(
  reply: FastifyReply,
  nonce: string,
  page: SafeHtml,
  status = 200,
): FastifyReply {
  return reply
    .code(status)
    .headers(publicPageHeaders(nonce))
    .type('text/html; charset=utf-8')
    .send(page.value);
}
