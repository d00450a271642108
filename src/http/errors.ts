import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isDatabaseUnavailable } from '../db/database.ts';
import { AppError, type FieldError, type ProblemCode, problemCodes } from '../lib/errors.ts';

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
  if (error.status === 503) reply.header('retry-after', '5');
  if (typeof error.extra.retry_after === 'number')
    reply.header('retry-after', String(error.extra.retry_after));
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

/** Statuses Fastify and its plugins answer on their own, and our code for each. */
const FRAMEWORK_STATUS_CODES: Readonly<Record<number, ProblemCode>> = {
  400: 'request.bad_request',
  404: 'request.not_found',
  405: 'request.method_not_allowed',
  408: 'request.timeout',
  413: 'request.body_too_large',
  414: 'request.uri_too_long',
  415: 'request.unsupported_media_type',
  429: 'rate_limited',
  431: 'request.header_too_large',
};

/** Maps what Fastify and its plugins throw to our codes; an unknown error becomes an empty 500. */
export function toAppError(error: FastifyError): AppError | null {
  if (error instanceof AppError) return error;
  // An outage, a restart or a failover: nothing the caller did; the pool reconnects on its own.
  if (isDatabaseUnavailable(error)) return new AppError('service.unavailable');
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
      return new AppError('request.bad_request', 'The body is not as long as Content-Length says');
    case 'FST_ERR_BAD_URL':
      return new AppError('request.bad_url', 'The path has a malformed %-encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new AppError('request.uri_too_long', 'A path segment is longer than this API takes');
  }
  if (error instanceof SyntaxError) return new AppError('request.malformed_json', error.message);
  if (error.statusCode === 403 && /csrf/i.test(error.code ?? '')) {
    return new AppError('auth.insufficient_scope', 'The form expired; reload the page and try again');
  }
  // Any other refusal of the framework or a plugin keeps its meaning under one of our codes.
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new AppError(FRAMEWORK_STATUS_CODES[status] ?? 'request.bad_request', error.message);
  }
  return null;
}

/**
 * Fastify's `frameworkErrors`: a path it cannot decode (`%zz`) or a parameter past the router's
 * length limit is refused before any route or hook runs; the answer is problem details all the same.
 */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const known = toAppError(error) ?? new AppError('request.bad_request');
  reply.header('x-content-type-options', 'nosniff');
  return sendProblem(reply, known, request);
}

const PARSER_ERROR = /^HPE_[A-Z_]+$/;

/**
 * Node's `clientError`: a request the HTTP parser refuses (a malformed or doubled Content-Length, a
 * control character in a header, headers too large) never reaches Fastify. It is answered here as
 * problem details on the raw socket, which is then closed.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const known =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new AppError('request.timeout')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new AppError('request.header_too_large')
        : new AppError(
            'request.bad_request',
            `The HTTP request could not be parsed${PARSER_ERROR.test(error.code ?? '') ? ` (${error.code})` : ''}`,
          );
  const body = JSON.stringify(problemBody(known));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${known.status} ${STATUS_CODES[known.status]}\r\n` +
        'Content-Type: application/problem+json\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(error);
}

export function registerErrorHandling(app: FastifyInstance): void {
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
