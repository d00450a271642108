import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
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

declare module 'fastify' {
  interface FastifyRequest {
    /** The code of the problem answered, if one was (the developer console counts them). */
    problemCode?: string;
  }
}

/**
 * RFC 6750 section 3: a 401 names the scheme (and `invalid_token` when a token was sent); a missing
 * scope is `insufficient_scope` with the scope the call needs.
 */
function bearerChallenge(error: AppError, request?: FastifyRequest): string | null {
  if (error.code === 'auth.invalid_token') {
    return request?.headers.authorization
      ? 'Bearer realm="waybill", error="invalid_token"'
      : 'Bearer realm="waybill"';
  }
  if (error.status === 401) return 'Bearer realm="waybill"';
  if (error.code === 'auth.insufficient_scope') {
    const scope = error.extra.required_scope;
    return `Bearer realm="waybill", error="insufficient_scope"${typeof scope === 'string' ? `, scope="${scope}"` : ''}`;
  }
  return null;
}

export function sendProblem(reply: FastifyReply, error: AppError, request?: FastifyRequest) {
  if (request) request.problemCode = error.code;
  const challenge = bearerChallenge(error, request);
  // A route that set its own challenge (/mcp names its resource metadata) keeps it.
  if (challenge && !reply.hasHeader('www-authenticate')) reply.header('www-authenticate', challenge);
  if (error.status === 503) reply.header('retry-after', '5');
  const retryAfter =
    error.retryAfter ?? (typeof error.extra.retry_after === 'number' ? error.extra.retry_after : undefined);
  if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter));
  return reply
    .code(error.status)
    .type('application/problem+json')
    .send(problemBody(error, request?.url.split('?')[0]));
}

/** Where a schema issue is: its instance path, with the field a missing or unknown property names. */
export function issuePath(issue: { instancePath: string; params: unknown }): string {
  const params = issue.params as Record<string, unknown>;
  const extra =
    typeof params.additionalProperty === 'string'
      ? `/${params.additionalProperty}`
      : typeof params.missingProperty === 'string'
        ? `/${params.missingProperty}`
        : '';
  return `${issue.instancePath}${extra}`;
}

/** Schema issues (Ajv's) as `validation.failed` lists them; `prefix` names a part other than the body. */
export function schemaFieldErrors(
  issues: readonly { instancePath: string; params: unknown; message?: string | undefined }[],
  prefix = '',
): FieldError[] {
  return issues.map((issue) => {
    return {
      path: `${prefix}${issuePath(issue)}` || '/',
      message: issue.message ?? 'is not valid',
    };
  });
}

function fieldErrors(error: FastifyError): FieldError[] {
  const context = error.validationContext ?? 'body';
  return schemaFieldErrors(error.validation ?? [], context === 'body' ? '' : `${context}:`);
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

/** The OAuth token and revoke endpoints answer every error in the RFC 6749 format, never problem details. */
const OAUTH_JSON_PATH = /^\/oauth\/(token|revoke)(?:[?#]|$)/;

/** The path of the request line at the start of what the parser read, when there is one. */
function requestPath(raw: Buffer | undefined): string | null {
  if (!raw || raw.length === 0) return null;
  const line = raw.subarray(0, Math.min(raw.length, 8192)).toString('latin1').split('\r\n', 1)[0] ?? '';
  const target = line.split(' ')[1];
  return target?.startsWith('/') ? target : null;
}

/** An answer on the raw socket or a response Fastify never saw: problem details, or RFC 6749 JSON at /oauth/token and /oauth/revoke. */
function earlyAnswer(known: AppError, path: string | null): { type: string; body: string } {
  if (path !== null && OAUTH_JSON_PATH.test(path)) {
    return {
      type: 'application/json; charset=utf-8',
      body: JSON.stringify({ error: 'invalid_request', error_description: known.message }),
    };
  }
  return { type: 'application/problem+json', body: JSON.stringify(problemBody(known)) };
}

/**
 * Node's `clientError`: a request the HTTP parser refuses (a malformed or doubled Content-Length, a
 * control character in a header such as a NUL in Basic credentials, headers too large) never
 * reaches Fastify. It is answered here on the raw socket, which is then closed: problem details, or
 * the RFC 6749 format when the request line names the OAuth token or revoke endpoint.
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
  const { type, body } = earlyAnswer(known, requestPath((error as { rawPacket?: Buffer }).rawPacket));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${known.status} ${STATUS_CODES[known.status]}\r\n` +
        `Content-Type: ${type}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Cache-Control: no-store\r\n' +
        'X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy(error);
}

/**
 * Node's `checkExpectation`: a request whose `Expect` header is not `100-continue` is refused by
 * Node itself with an empty 417 unless the server listens for this event; the refusal is 417
 * `request.expectation_failed` in problem details (RFC 6749 JSON at the OAuth token and revoke
 * endpoints). The request never reaches Fastify, and the connection closes after the answer.
 */
export function expectationHandler(request: IncomingMessage, response: ServerResponse): void {
  const known = new AppError(
    'request.expectation_failed',
    'The Expect header asks for something this server does not do; send no Expect, or Expect: 100-continue',
  );
  const { type, body } = earlyAnswer(known, request.url ?? null);
  response.shouldKeepAlive = false;
  response.writeHead(known.status, {
    'content-type': type,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    connection: 'close',
  });
  response.end(body);
  // Whatever body the client sends after its headers is not read.
  request.resume();
}

/**
 * Answers an error of a page a person reads (the dashboard, the developer portal, the review
 * console) with a page in their shell instead of problem JSON; undefined for any other request.
 */
export type PageErrorAnswer = (
  request: FastifyRequest,
  reply: FastifyReply,
  error: AppError,
) => FastifyReply | Promise<FastifyReply> | undefined;

export function registerErrorHandling(app: FastifyInstance, pageError?: PageErrorAnswer): void {
  const answer = (request: FastifyRequest, reply: FastifyReply, known: AppError) =>
    pageError?.(request, reply, known) ?? sendProblem(reply, known, request);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const known = toAppError(error);
    if (known) return answer(request, reply, known);
    request.log.error({ err: error }, 'unhandled error');
    const internal = new AppError('internal', `Something went wrong (request ${request.id})`);
    return answer(request, reply, internal);
  });
  app.setNotFoundHandler((request, reply) =>
    answer(
      request,
      reply,
      new AppError('request.not_found', `No route ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
}

export { problemCodes };
