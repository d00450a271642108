import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { acceptRawBodies } from '../../http/raw-body.ts';
import { errorResponses, Page, PageQuery } from '../../http/schemas.ts';
import { AppError, validationError } from '../../lib/errors.ts';
import { jsonFault } from '../../lib/text.ts';
import { requireAccess } from '../accounts/access.ts';
import { getMessage, listMessages } from './messages.ts';
import {
  type InboundCheckpoint,
  MAX_BODY_BYTES,
  receiveMessage,
  rejectBody,
  SourceRateLimiter,
  sourceForMessage,
  verifyMessage,
} from './receive.ts';
import {
  CreateSourceBody,
  InboundBody,
  InboundMessageSchema,
  MessageIdParams,
  ReceiveAnswerSchema,
  SourceIdParams,
  SourceSchema,
  SourceSecretSchema,
  SourceWithSecretSchema,
  UpdateSourceBody,
} from './schemas.ts';
import {
  createSource,
  deleteSource,
  getSource,
  listSources,
  rotateSourceSecret,
  updateSource,
} from './sources.ts';
import type { InboundSourcesTable } from './tables.ts';

const tags = ['Inbound'];
const write = (request: { principal: Parameters<typeof requireAccess>[0] }) =>
  requireAccess(request.principal, 'webhooks:write');
const auth = { scope: 'webhooks:write' } as const;

/** Inbound sources and their log (CONTRACT.md "Inbound"): thin handlers over the services. */
export function inboundSourceRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const byId = { params: SourceIdParams, tags };

    app.post(
      '/v1/inbound-sources',
      {
        config: { auth },
        schema: {
          tags,
          summary:
            'Create an inbound source: a carrier or partner that sends signed checkpoints; the answer carries its secret once',
          body: CreateSourceBody,
          response: { 201: SourceWithSecretSchema, ...errorResponses(400, 401, 403, 404, 422) },
        },
      },
      async (request, reply) => reply.code(201).send(await createSource(ctx, write(request), request.body)),
    );

    app.get(
      '/v1/inbound-sources',
      {
        config: { auth },
        schema: {
          tags,
          summary: "The inbound sources of the token's company and mode, newest first (no secrets)",
          querystring: PageQuery,
          response: { 200: Page(SourceSchema), ...errorResponses(400, 401, 403) },
        },
      },
      async (request) => listSources(ctx, write(request), request.query),
    );

    app.get(
      '/v1/inbound-sources/:id',
      {
        config: { auth },
        schema: {
          ...byId,
          summary: 'An inbound source',
          response: { 200: SourceSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => getSource(ctx, write(request), request.params.id),
    );

    app.patch(
      '/v1/inbound-sources/:id',
      {
        config: { auth },
        schema: {
          ...byId,
          summary: 'Rename a source or change its carrier code (its mode and merchant stay)',
          body: UpdateSourceBody,
          response: { 200: SourceSchema, ...errorResponses(400, 401, 403, 404, 422) },
        },
      },
      async (request) => updateSource(ctx, write(request), request.params.id, request.body),
    );

    app.delete(
      '/v1/inbound-sources/:id',
      {
        config: { auth },
        schema: {
          ...byId,
          summary: 'Delete a source with its log; its URL answers 404 from then on',
          response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
        },
      },
      async (request, reply) => {
        await deleteSource(ctx, write(request), request.params.id);
        return reply.code(204).send(null);
      },
    );

    app.post(
      '/v1/inbound-sources/:id/secret/rotate',
      {
        config: { auth },
        schema: {
          ...byId,
          summary: 'A new signing secret; the previous one still verifies for 24 hours',
          response: { 200: SourceSecretSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => rotateSourceSecret(ctx, write(request), request.params.id),
    );

    app.get(
      '/v1/inbound-sources/:id/messages',
      {
        config: { auth },
        schema: {
          ...byId,
          summary:
            "The source's inbound log: every message received, newest first, with its outcome (never its body)",
          querystring: PageQuery,
          response: { 200: Page(InboundMessageSchema), ...errorResponses(400, 401, 403, 404) },
        },
      },
      async (request) => listMessages(ctx, write(request), request.params.id, request.query),
    );

    app.get(
      '/v1/inbound-sources/:id/messages/:message_id',
      {
        config: { auth },
        schema: {
          params: MessageIdParams,
          tags,
          summary: 'One message of the inbound log',
          response: { 200: InboundMessageSchema, ...errorResponses(401, 403, 404) },
        },
      },
      async (request) => getMessage(ctx, write(request), request.params.id, request.params.message_id),
    );
  };
}

/**
 * `POST {base_url}/inbound/{ins_id}`: the carrier's signed batch. The source is found and the rate
 * counted when the request arrives; the body is taken as raw bytes (this route's own parser), and
 * its signature checked over them before any JSON is parsed; only then is it parsed and validated.
 */
export function inboundReceiveRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    const limiter = new SourceRateLimiter(ctx.clock);
    const sources = new WeakMap<FastifyRequest, InboundSourcesTable>();
    const sourceOf = (request: FastifyRequest) => {
      const source = sources.get(request);
      if (!source) throw new AppError('inbound_source.not_found');
      return source;
    };

    // Raw bytes whatever the type: the signature covers the bytes, and JSON is read only once it holds.
    acceptRawBodies(app, MAX_BODY_BYTES);

    app.post(
      '/inbound/:id',
      {
        config: { auth: 'public', rawBody: true },
        bodyLimit: MAX_BODY_BYTES,
        attachValidation: true,
        schema: {
          tags,
          summary: "A carrier's signed batch of checkpoints (Standard Webhooks, with the source's secret)",
          description:
            "Needs no token: `webhook-id`, `webhook-timestamp` and `webhook-signature` signed with the source's secret (or its previous one for 24 h after a rotation) are checked before the body is read; a bad or missing signature, or a timestamp more than 5 minutes away, is 401 and logged `rejected` without the body. The same `webhook-id` again answers 202 and changes nothing. Each checkpoint names its shipment by `tracking_number` (or `carrier_tracking_number`) within the source's company, mode and merchant account; one that matches none is counted `unmatched`. 1 to 500 checkpoints, 1 MB at most (413), 100 messages a second per source (429 with Retry-After).",
          params: SourceIdParams,
          consumes: ['application/json'],
          body: InboundBody,
          response: { 202: ReceiveAnswerSchema, ...errorResponses(400, 401, 404, 413, 429) },
        },
        onRequest: async (request) => {
          const { id } = request.params as { id: string };
          const source = await sourceForMessage(ctx, id);
          limiter.take(source.id);
          sources.set(request, source);
        },
        preValidation: async (request) => {
          const source = sourceOf(request);
          const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
          await verifyMessage(ctx, source, request.headers, raw);
          let parsed: unknown;
          try {
            parsed = JSON.parse(raw.toString('utf8'));
          } catch {
            await rejectBody(ctx, source, request.headers, 'the body is not JSON');
            throw new AppError('request.malformed_json');
          }
          const fault = jsonFault(parsed);
          if (fault !== null) {
            await rejectBody(
              ctx,
              source,
              request.headers,
              'the body is nested too deeply or holds control characters',
            );
            if (fault.kind === 'too_deep') throw new AppError('request.too_deep');
            throw validationError([{ path: fault.path, message: fault.message }]);
          }
          request.body = parsed as typeof request.body;
        },
      },
      async (request, reply) => {
        const source = sourceOf(request);
        if (request.validationError) {
          await rejectBody(ctx, source, request.headers, request.validationError.message);
          throw request.validationError;
        }
        const checkpoints = request.body.checkpoints as InboundCheckpoint[];
        const nameless = checkpoints.findIndex((c) => !c.tracking_number && !c.carrier_tracking_number);
        if (nameless >= 0) {
          const path = `/checkpoints/${nameless}`;
          await rejectBody(
            ctx,
            source,
            request.headers,
            `${path} names no tracking_number or carrier_tracking_number`,
          );
          throw validationError([{ path, message: 'needs tracking_number or carrier_tracking_number' }]);
        }
        const webhookId = String(request.headers['webhook-id']);
        return reply.code(202).send(await receiveMessage(ctx, source, webhookId, checkpoints));
      },
    );
  };
}
