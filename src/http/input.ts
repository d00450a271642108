import { parse as parseQueryString } from 'node:querystring';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AppError, validationError } from '../lib/errors.ts';
import { jsonFault, MAX_JSON_DEPTH, textFault } from '../lib/text.ts';

/**
 * Where input enters, one place per kind, so that no route sees text the service cannot store or
 * echo (src/lib/text.ts): JSON bodies, form bodies, and the URL (path parameters and query).
 * Header-borne credentials are decoded in one place too (src/modules/oauth/client-auth.ts; bearer
 * tokens are printable ASCII by src/http/auth.ts).
 */

export type Form = Record<string, string | string[]>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route takes the body as raw bytes of any type (uploads); it checks them itself. */
    rawBody?: boolean;
  }
}

function refused(path: string, message: string): AppError {
  return validationError([{ path, message }], `${path} ${message}`);
}

/** application/x-www-form-urlencoded (pages and the OAuth endpoints): repeated fields become arrays. */
export function parseForm(body: string): Form {
  const form = parseQueryString(body) as Form;
  for (const [name, value] of Object.entries(form)) {
    if (textFault(name, 'text')) throw refused('/', 'field names must be plain text');
    for (const one of Array.isArray(value) ? value : [value]) {
      const fault = textFault(one, 'text');
      if (fault) throw refused(`/${name}`, fault);
    }
  }
  return form;
}

/** JSON bodies: Fastify's own parser (which refuses __proto__), then depth and text checks. */
function registerJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    parseJson(request, body as string, (error, value) => {
      if (error) return done(error, undefined);
      const fault = jsonFault(value);
      if (fault === null) return done(null, value);
      done(
        fault.kind === 'too_deep'
          ? new AppError('request.too_deep', `The body nests deeper than ${MAX_JSON_DEPTH} levels`)
          : refused(fault.path, fault.message),
        undefined,
      );
    });
  });
}

/** Path parameters and the query: single-line text (they end up in SQL, Location headers, pages). */
function refuseControlsInUrl(request: FastifyRequest): void {
  const parts: Array<[string, unknown]> = [
    ['params', request.params],
    ['querystring', request.query],
  ];
  for (const [part, values] of parts) {
    if (!values || typeof values !== 'object') continue;
    for (const [name, value] of Object.entries(values)) {
      if (textFault(name, 'line')) throw refused(`${part}:/`, 'names must be plain text');
      for (const one of Array.isArray(value) ? value : [value]) {
        const fault = typeof one === 'string' ? textFault(one, 'line') : null;
        if (fault) throw refused(`${part}:/${name}`, fault);
      }
    }
  }
}

/**
 * API bodies are JSON (spec section 4), and so are MCP messages and client registrations; everything else (pages' forms, the OAuth endpoints) takes
 * forms. Fastify would parse either anywhere, and text/plain too, so a body of another type is
 * refused before it is read: a dashboard form never sees a number or an object where it reads text.
 */
function refuseUnexpectedBodyType(request: FastifyRequest): void {
  const type = request.headers['content-type'];
  // Uploads (listing media) take raw bytes, whose type the route reads from the bytes themselves.
  if (type === undefined || request.is404 || request.routeOptions.config.rawBody) return;
  const mediaType = type.split(';')[0]?.trim().toLowerCase();
  const path = request.url.split('?')[0];
  const json = request.url.startsWith('/v1/') || path === '/mcp' || path === '/oauth/register';
  const expected = json ? 'application/json' : 'application/x-www-form-urlencoded';
  if (mediaType !== expected) {
    throw new AppError('request.unsupported_media_type', `Send the body as ${expected}, not ${mediaType}`);
  }
}

export function registerInputGuards(app: FastifyInstance): void {
  registerJsonParser(app);
  // preParsing: after authentication and authorisation (onRequest, src/http/auth.ts), before the
  // body is read.
  app.addHook('preParsing', async (request, _reply, payload) => {
    refuseControlsInUrl(request);
    refuseUnexpectedBodyType(request);
    return payload;
  });
}
