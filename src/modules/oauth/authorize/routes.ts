import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.ts';
import { toAppError } from '../../../http/errors.ts';
import { peerAddress } from '../../../http/rate-limits.ts';
import { AppError } from '../../../lib/errors.ts';
import { sendPage } from '../../../web/layout.ts';
import { pageUser } from '../../../web/session.ts';
import type { Scope } from '../../accounts/roles.ts';
import { publishedJustifications } from '../../store/index.ts';
import { isMetadataDocumentId } from '../client-metadata.ts';
import { UntrustedRedirectError } from '../errors.ts';
import { installTargets, offeredScopes, widenedTargets } from './accounts.ts';
import { approveAuthorization } from './approve.ts';
import { authorizeErrorPage, consentPage, GRANT_FIELD } from './consent-page.ts';
import {
  type AuthorizationRequest,
  checkAuthorizationRequest,
  clientRedirect,
  RedirectedError,
} from './request.ts';

type Params = Record<string, unknown>;

/**
 * Headers of every authorization-endpoint answer: never framed (clickjacking, RFC 9700 section
 * 4.16), never cached. Chrome applies form-action to the redirect that follows the consent form's
 * POST, so the client's origin is allowed there, and only there.
 */
function protect(reply: FastifyReply, redirectUri?: string) {
  const formAction = redirectUri ? `'self' ${new URL(redirectUri).origin}` : "'self'";
  reply
    .header('x-frame-options', 'DENY')
    .header(
      'content-security-policy',
      `default-src 'self'; style-src 'self'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'; object-src 'none'`,
    )
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer');
}

function redirectTo(
  ctx: AppContext,
  reply: FastifyReply,
  redirectUri: string,
  params: Record<string, string | null>,
) {
  protect(reply);
  return reply.redirect(clientRedirect(ctx, redirectUri, params), 303);
}

/** Turns the two kinds of authorization failure into their answers (RFC 6749 section 4.1.2.1). */
async function answering(ctx: AppContext, reply: FastifyReply, run: () => Promise<unknown>) {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UntrustedRedirectError) {
      protect(reply);
      return sendPage(reply, authorizeErrorPage(error.message), error.status);
    }
    if (error instanceof RedirectedError) {
      return redirectTo(ctx, reply, error.redirectUri, {
        error: error.error.code,
        error_description: error.error.message,
        state: error.state,
      });
    }
    throw error;
  }
}

/**
 * What the shared checks refuse (src/http/input.ts: control characters in the query or form, a
 * body that is not a form; an expired CSRF token) is shown to the person as the error page too:
 * the request is not trusted, so it is never redirected.
 */
function authorizeErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  let known = toAppError(error);
  if (!known || known.status >= 500) {
    request.log.error({ err: error }, 'authorization endpoint failed');
    known = new AppError('internal', `Something went wrong (request ${request.id})`);
  }
  protect(reply);
  return sendPage(reply, authorizeErrorPage(known.message), known.status);
}

/**
 * The scopes the person left ticked: at least one, and only scopes the request asked for (the
 * form travels through the browser; a scope added there is refused, never granted).
 */
function chosenScopes(request: AuthorizationRequest, field: unknown): Scope[] {
  const values = Array.isArray(field) ? field : field === undefined ? [] : [field];
  const chosen = [...new Set(values.map(String))];
  if (chosen.length === 0) {
    throw new UntrustedRedirectError('Choose at least one permission to give, or deny the request.');
  }
  // What was asked, and for `/mcp` what the page offered beside it (RFC 6749 3.3: the grant may
  // be wider than the request; the token response names it).
  const asked = new Set<string>([...request.scopes, ...offeredScopes(request)]);
  if (!chosen.every((scope) => asked.has(scope))) {
    throw new UntrustedRedirectError(
      'The form names a permission the app did not ask for. Start again from the app.',
    );
  }
  return chosen as Scope[];
}

/** GET and POST {web_url}/oauth/authorize: the consent page and its decision. */
export function registerAuthorizeRoutes(app: FastifyInstance, ctx: AppContext): void {
  const options = { schema: { hide: true }, errorHandler: authorizeErrorHandler };
  app.get<{ Querystring: Params }>('/oauth/authorize', options, async (request, reply) =>
    answering(ctx, reply, async () => {
      const user = await pageUser(ctx, request);
      // The sign-in page comes back to the whole request. A client metadata document is fetched
      // only for a signed-in person (review finding I2): no one else makes Waybill fetch a URL.
      const signIn = () => reply.redirect(`/signin?return_to=${encodeURIComponent(request.url)}`, 303);
      if (!user && isMetadataDocumentId(String(request.query.client_id ?? ''))) return signIn();
      const checked = await checkAuthorizationRequest(ctx, request.query, peerAddress(request));
      if (!user) return signIn();
      const all = await installTargets(ctx, user.userId);
      const { targets, granted } =
        checked.widens && all.length > 0
          ? await widenedTargets(ctx, checked.app.id, all)
          : { targets: all, granted: [] };
      if (targets.length === 0) {
        throw new UntrustedRedirectError(
          'Only owners, admins and merchant admins can connect apps. Ask one of them to connect it.',
          403,
        );
      }
      protect(reply, checked.redirectUri);
      const justifications = await publishedJustifications(ctx, checked.app.id);
      return sendPage(reply, consentPage(checked, targets, reply.generateCsrf(), justifications, granted));
    }),
  );

  app.post<{ Body: Params }>(
    '/oauth/authorize',
    { ...options, preValidation: app.csrfProtection },
    async (request, reply) =>
      answering(ctx, reply, async () => {
        const form = request.body ?? {};
        const checked: AuthorizationRequest = await checkAuthorizationRequest(
          ctx,
          form,
          peerAddress(request),
        );
        const user = await pageUser(ctx, request);
        if (!user) throw new UntrustedRedirectError('Your session ended. Start again from the app.', 401);
        // RFC 6749 section 4.1.2.1: the person said no.
        if (form.decision !== 'approve') {
          return redirectTo(ctx, reply, checked.redirectUri, {
            error: 'access_denied',
            error_description: 'the person denied the request',
            state: checked.state,
          });
        }
        const code = await approveAuthorization(
          ctx,
          { ...checked, scopes: chosenScopes(checked, form[GRANT_FIELD]) },
          user.userId,
          String(form.account ?? ''),
          String(form.mode ?? 'test'),
        );
        // RFC 6749 section 4.1.2 and RFC 9207: code, state and iss; 303 so the browser GETs it.
        return redirectTo(ctx, reply, checked.redirectUri, { code, state: checked.state });
      }),
  );
}
