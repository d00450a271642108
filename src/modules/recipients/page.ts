import { html, type SafeHtml } from '../../web/html.ts';
import { publicLayout } from '../../web/public-layout.ts';
import type { Look } from './branding.ts';
import { countryName, formatTime, type Language, WORDS } from './language.ts';
import type { TimelineEntry, TrackingFacts } from './timeline.ts';

function statusWords(language: Language, status: string | null): string {
  return (status && WORDS[language].statuses[status]) || '';
}

function subStatusWords(language: Language, code: string | null): string | null {
  return code ? ((WORDS[language].subStatuses as Record<string, string>)[code] ?? null) : null;
}

/** City and country only: never a postal code or coordinates. */
function place(language: Language, entry: TimelineEntry): string {
  return [entry.city, entry.country ? countryName(language, entry.country) : null].filter(Boolean).join(', ');
}

function timelineItem(language: Language, entry: TimelineEntry): SafeHtml {
  const where = place(language, entry);
  return html`<li><time datetime="${entry.at.toISOString()}">${formatTime(language, entry.at)}</time>
${where ? html`<span class="place">${where}</span>` : ''}
<span>${entry.message ?? statusWords(language, entry.status)}</span></li>`;
}

/**
 * The recipient's page: the brand, the status in words, the estimate, the timeline, who received
 * it. Built only from `facts` and the brand, which carry nothing personal and no id.
 */
export function trackingPage(options: {
  language: Language;
  look: Look;
  facts: TrackingFacts;
  logoUrl: string | null;
  nonce: string;
}): SafeHtml {
  const { language, look, facts } = options;
  const words = WORDS[language];
  const reason =
    facts.status === 'exception' && facts.exceptionReason
      ? words.exceptionReasons[facts.exceptionReason]
      : null;
  const detail = subStatusWords(language, facts.subStatus);
  const body = html`<header class="brand-band">
${options.logoUrl ? html`<img src="${options.logoUrl}" alt="${look.name}">` : ''}
<p class="brand-name">${look.name}</p>
</header>
<main class="tracking">
<h1>${words.pageTitle}</h1>
<p class="status-line" role="status"><strong>${statusWords(language, facts.status)}</strong></p>
${reason ? html`<p>${reason}</p>` : ''}
${detail ? html`<p class="sub-status">${detail}</p>` : ''}
${facts.estimate ? html`<p>${words.estimate}: ${formatTime(language, facts.estimate.earliest)} – ${formatTime(language, facts.estimate.latest)}</p>` : ''}
${facts.deliveredBy ? html`<p>${words.deliveredBy}: ${facts.deliveredBy}</p>` : ''}
<h2>${words.timeline}</h2>
${
  facts.timeline.length > 0
    ? html`<ol class="timeline">${facts.timeline.map((entry) => timelineItem(language, entry))}</ol>`
    : html`<p class="muted">${words.noEvents}</p>`
}
${look.supportUrl ? html`<p><a href="${look.supportUrl}" rel="noopener noreferrer">${words.help}</a></p>` : ''}
</main>
<footer>${words.poweredBy}</footer>`;
  return publicLayout(
    {
      title: `${words.pageTitle} · ${look.name}`,
      lang: language,
      styleNonce: options.nonce,
      styleVars: { brand: look.accent, 'on-brand': look.onAccent },
    },
    body,
  );
}

/** An unknown token: a plain page that says nothing more. */
export function notFoundPage(language: Language, nonce: string): SafeHtml {
  const words = WORDS[language];
  return publicLayout(
    { title: words.notFoundTitle, lang: language, styleNonce: nonce },
    html`<main class="tracking"><h1>${words.notFoundTitle}</h1><p>${words.notFoundBody}</p></main>`,
  );
}
