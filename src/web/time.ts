import { html, type SafeHtml } from './html.ts';

/** A timestamp as the server writes it, before the page's script puts it in the viewer's zone: "2026-11-21 12:00 UTC". */
export function formatTime(iso: string | null): string {
  return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : '';
}

/** How long ago, as people say it: "just now", "3 min ago", "5 h ago", "2 days ago". */
export function timeAgo(iso: string, now: Date): string {
  const seconds = Math.round((now.getTime() - new Date(iso).getTime()) / 1000);
  if (seconds < -60) return 'in the future';
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  const days = Math.floor(seconds / 86400);
  return days === 1 ? 'yesterday' : `${days} days ago`;
}

/**
 * Every time a dashboard page shows: a <time datetime> whose text is UTC (what a reader without
 * script sees), and, with `now`, how long ago beside it. /static/local-time.js rewrites both in the
 * viewer's zone and language (Intl.DateTimeFormat, Intl.RelativeTimeFormat), the relative one
 * counted from the server's clock (`data-now`), so a page says the same as its server.
 */
export function timeTag(iso: string | Date | null | undefined, now?: Date): SafeHtml | '' {
  if (!iso) return '';
  const at = typeof iso === 'string' ? iso : iso.toISOString();
  const utc = formatTime(at);
  const ago = now
    ? html` <span class="ago muted small" data-ago-of="${at}" data-now="${now.toISOString()}">${timeAgo(at, now)}</span>`
    : '';
  return html`<span class="when"><time class="local-time" datetime="${at}" title="${utc}">${utc}</time>${ago}</span>`;
}
