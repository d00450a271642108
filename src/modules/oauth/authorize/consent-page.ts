import { html, type SafeHtml } from '../../../web/html.ts';
import { csrfField, layout } from '../../../web/layout.ts';
import { SCOPE_DESCRIPTIONS, type Scope } from '../../accounts/roles.ts';
import { grantableScopes, type InstallTarget, offeredScopes } from './accounts.ts';
import type { AuthorizationRequest } from './request.ts';

/** The consent form's scope checkboxes: the scopes the person gives, a subset of those asked. */
export const GRANT_FIELD = 'grant_scope';

function link(label: string, url: string | null): SafeHtml | string {
  // Only http(s) links are shown: a javascript: URL in an app's record must never become clickable.
  if (!url || !/^https?:\/\//i.test(url)) return '';
  return html`<li><a href="${url}" rel="noopener noreferrer" target="_blank">${label}</a></li>`;
}

/** The request travels in hidden fields, and is checked again on the POST. */
function hiddenRequest(request: AuthorizationRequest): SafeHtml {
  const fields: Record<string, string> = {
    response_type: 'code',
    client_id: request.app.id,
    redirect_uri: request.redirectUri,
    scope: request.scopes.join(' '),
    ...(request.state === null ? {} : { state: request.state }),
    code_challenge: request.codeChallenge,
    code_challenge_method: 'S256',
    resource: request.resourceUrl,
  };
  return html`${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">`)}`;
}

function targetOption(request: AuthorizationRequest, target: InstallTarget, checked: boolean): SafeHtml {
  const { withheld } = grantableScopes(request.scopes, target.role);
  return html`<label class="choice"><input type="radio" name="account" value="${target.value}" required${checked ? html` checked` : ''}>
<span>${target.label} <span class="muted">(${target.role})</span></span>
${withheld.length > 0 ? html`<span class="muted">Your role cannot grant: ${withheld.join(', ')}. ${withheld.length === 1 ? 'It is' : 'They are'} left out.</span>` : ''}
</label>`;
}

/**
 * A scope in plain words, as a checkbox ticked by default: the person may leave any of them out
 * (at least one stays). A published app's reviewed reason for it stands beside it.
 */
function scopeChoice(scope: Scope, justification: string | undefined, ticked = true): SafeHtml {
  return html`<label class="choice"><input type="checkbox" name="${GRANT_FIELD}" value="${scope}"${ticked ? html` checked` : ''}>
<span><strong>${SCOPE_DESCRIPTIONS[scope]}</strong> <code>${scope}</code>${
    justification ? html`<br><span class="muted justification">Why: ${justification}</span>` : ''
  }</span></label>`;
}

/** Who asks: a portal app describes itself; an agent client is shown for what Waybill checked. */
function whoAsks(request: AuthorizationRequest): SafeHtml {
  const agent = request.agentClient;
  if (!agent) {
    const app = request.app;
    return html`<p>${app.description}</p>
<ul class="links">${link('Homepage', app.homepage_url)}${link('Privacy policy', app.privacy_url)}${link('Support', app.support_url)}</ul>`;
  }
  const who =
    agent.source === 'metadata_document' && agent.clientHost
      ? html`An AI agent that describes itself at <strong>${agent.clientHost}</strong>.`
      : html`<span class="badge warning">Self-described</span> An AI agent that registered itself: its name and links are its own claims, checked by no one.`;
  return html`<p class="agent-identity">${who} After you decide, you are sent to <strong>${agent.redirectTarget}</strong>.</p>
${agent.loopbackOnly ? html`<p class="warning" role="alert">This agent runs on a computer, not a website: it returns to this computer. Approve only if you started it yourself just now.</p>` : ''}`;
}

/**
 * The consent page (spec 4.1): who asks, for what, in plain words, into which account. A published
 * app's reviewed justification stands beside each scope.
 */
export function consentPage(
  request: AuthorizationRequest,
  targets: InstallTarget[],
  csrf: string,
  justifications: Partial<Record<Scope, string>> | null = null,
  alreadyGranted: readonly Scope[] = [],
): SafeHtml {
  const app = request.app;
  // An installed app asking for optional scopes: only what is new is listed.
  const fresh = request.scopes.filter((s) => !alreadyGranted.includes(s));
  const asked = fresh.length > 0 ? fresh : request.scopes;
  const offered = offeredScopes(request);
  return layout(
    { title: `Connect ${app.name}` },
    html`<section class="card narrow consent">
<h1>Connect ${app.name}</h1>
${whoAsks(request)}
<form class="stack" method="post" action="/oauth/authorize">
${csrfField(csrf)}
${hiddenRequest(request)}
<fieldset class="scopes"><legend>${app.name} asks${alreadyGranted.length > 0 ? ' also' : ''} to <span class="muted">(untick what you do not want to give)</span></legend>
${asked.map((s) => scopeChoice(s, justifications?.[s]))}
</fieldset>
${
  offered.length > 0
    ? html`<fieldset class="scopes offered"><legend>You may also let it <span class="muted">(not asked for; tick only what you want it to do)</span></legend>
${offered.map((s) => scopeChoice(s, justifications?.[s], false))}
</fieldset>`
    : ''
}
${alreadyGranted.length > 0 ? html`<p class="muted already-granted">Already granted, and kept: ${alreadyGranted.join(', ')}.</p>` : ''}
<fieldset><legend>Install into <span class="muted">(company or merchant account)</span></legend>
${targets.map((t, i) => targetOption(request, t, i === 0))}
</fieldset>
${
  request.resource === 'mcp'
    ? html`<fieldset><legend>Data the agent works with</legend>
<label class="choice"><input type="radio" name="mode" value="test" checked><span>Test data <span class="muted">(sandbox shipments; the safe choice)</span></span></label>
<label class="choice"><input type="radio" name="mode" value="live"><span>Live data <span class="muted">(only for a live company whose agent access allows it)</span></span></label>
</fieldset>`
    : ''
}
${request.agentClient ? '' : html`<p class="muted">You will be sent back to <code>${new URL(request.redirectUri).origin}</code>.</p>`}
<div class="actions">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny" class="secondary" formnovalidate>Deny</button>
</div>
</form>
</section>`,
  );
}

export function authorizeErrorPage(message: string): SafeHtml {
  return layout(
    { title: 'Cannot connect the app' },
    html`<section class="card narrow"><h1>This app cannot be connected</h1><p>${message}</p>
<p class="muted">Nothing was shared. You can close this page.</p></section>`,
  );
}
