import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type FieldError, problemCodes } from '../lib/errors.ts';

const PROBLEM_BASE = 'https://waybill.dev/problems/';

export function problemBody(error: AppError, instance?: string) {
  return {
    type: `${PROBLEM_BASE}${error.code}`,
    title: error.title,
    status: error.status,
    detail: error.message,
    code: error.code,
    ...(instance ? { instance } : {}),
    ...error.extra,
  };
}

export function sendProblem(reply: FastifyReply, error: AppError, request?: FastifyRequest) {
  if (error.status === 401) reply.header('www-authenticate', 'Bearer realm="waybill"');
  return reply
    .code(error.status)
    .type('application/problem+json')
    .send(problemBody(error, request?.url.split('?')[0]));
}

function fieldErrors(error: FastifyError): FieldError[] {
  return (error.validation ?? []).map((issue) => {
    const params = issue.params as Record<string, unknown>;
    const extra =
      typeof params.additionalProperty === 'string'
        ? `/${params.additionalProperty}`
        : typeof params.missingProperty === 'string'
          ? `/${params.missingProperty}`
          : '';
    const context = error.validationContext ?? 'body';
    return {
      path: `${context === 'body' ? '' : `${context}:`}${issue.instancePath}${extra}` || '/',
      message: issue.message ?? 'is not valid',
    };
  });
}

/** Maps what Fastify and its plugins throw to our codes; an unknown error becomes an empty 500. */
export function toAppError(error: FastifyError): AppError | null {
  if (error instanceof AppError) return error;
  if (error.validation)
    return new AppError('validation.failed', error.message, { errors: fieldErrors(error) });
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError('request.unsupported_media_type', 'Send the body as application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AppError('request.malformed_json', error.message);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('request.body_too_large');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError('validation.failed', error.message, { errors: [] });
  }
  if (error instanceof SyntaxError || error.statusCode === 400)
    return new AppError('request.malformed_json', error.message);
  if (error.statusCode === 429) return new AppError('rate_limited', error.message);
  if (error.statusCode === 403 && /csrf/i.test(error.code ?? '')) {
    return new AppError('auth.insufficient_scope', 'The form expired; reload the page and try again');
  }
  return null;
}

/**
 * API bodies are JSON (spec section 4). Fastify would also parse text/plain, and the form plugin
 * url-encoded bodies, so any other declared type on /v1 is refused before it is read.
 */
function refuseNonJsonApiBodies(request: FastifyRequest): void {
  const type = request.headers['content-type'];
  if (!type || !request.url.startsWith('/v1/')) return;
  const mediaType = type.split(';')[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    throw new AppError(
      'request.unsupported_media_type',
      `Send the body as application/json, not ${mediaType}`,
    );
  }
}

export function registerErrorHandling(app: FastifyInstance): void {
  // preParsing: after the security headers are set (onRequest), before the body is read.
  app.addHook('preParsing', async (request, _reply, payload) => {
    refuseNonJsonApiBodies(request);
    return payload;
  });
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = toAppError(error);
    if (known) return sendProblem(reply, known, request);
    request.log.error({ err: error }, 'unhandled error');
    const internal = new AppError('internal', `Something went wrong (request ${request.id})`);
    return sendProblem(reply, internal, request);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      new AppError('request.not_found', `No route ${request.method} ${request.url.split('?')[0]}`),
      request,
    ),
  );
}

export { problemCodes };
