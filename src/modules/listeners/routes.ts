import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import websocket, { type WebSocket } from '@fastify/websocket';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { errorResponses } from '../../http/schemas.ts';
import { AppError } from '../../lib/errors.ts';
import { eventTypesOf } from '../webhooks/endpoints.ts';
import { EndpointIdParams, EndpointWithSecretSchema, EventTypeList } from '../webhooks/schemas.ts';
import { ListenerHub } from './hub.ts';
import { createListener, findListener, requireListenerAccess } from './service.ts';

const tags = ['Webhooks'];

const CreateListenerBody = Type.Object(
  {
    forward_to: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: '^https?://',
      description: 'Where the command forwards each message on its own machine (shown in the dashboard)',
    }),
    event_types: Type.Optional(EventTypeList),
  },
  { additionalProperties: false },
);

/** Test API keys only: checked on arrival, after authentication and before the body is read. */
async function testModeOnly(request: FastifyRequest): Promise<void> {
  requireListenerAccess(request.principal);
}

/**
 * `waybill listen` (issue 11; decision 0012): the command registers a listener, then holds a
 * WebSocket over which Waybill sends it messages and it answers with its receiver's answers.
 */
export function listenerRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
    const hub = new ListenerHub(ctx);
    app.addHook('onClose', async () => hub.close());

    app.post(
      '/v1/webhook-listeners',
      {
        config: { auth: { scope: 'webhooks:write' } },
        onRequest: testModeOnly,
        schema: {
          tags,
          summary:
            'Register a listener for `waybill listen`: a temporary test endpoint that receives over the command’s connection; the answer carries its secret',
          body: CreateListenerBody,
          response: { 201: EndpointWithSecretSchema, ...errorResponses(400, 401, 403, 409) },
        },
      },
      async (request, reply) =>
        reply
          .code(201)
          .send(await createListener(ctx, requireListenerAccess(request.principal), request.body)),
    );

    const listenerId = (request: FastifyRequest) => (request.params as { id: string }).id;
    // Before the upgrade: an unknown listener, or one connected already, is an HTTP answer.
    const listenerFree = async (request: FastifyRequest): Promise<void> => {
      await findListener(ctx, requireListenerAccess(request.principal), listenerId(request));
      if (hub.isConnected(listenerId(request))) {
        throw new AppError('webhook_listener.already_connected', 'Another command holds this listener');
      }
    };
    const onSocket = async (socket: WebSocket, request: FastifyRequest): Promise<void> => {
      const id = listenerId(request);
      try {
        const listener = await findListener(ctx, requireListenerAccess(request.principal), id);
        if (hub.isConnected(id)) socket.close(4409, 'already connected');
        else hub.attach(id, eventTypesOf(listener), socket);
      } catch (err) {
        // Checked before the upgrade; it went meanwhile, or the database is away.
        socket.close(
          err instanceof AppError ? 4404 : 1011,
          err instanceof AppError ? 'no such listener' : 'try again',
        );
      }
    };

    app.route({
      method: 'GET',
      url: '/v1/webhook-listeners/:id/connect',
      config: { auth: { scope: 'webhooks:write' } },
      onRequest: testModeOnly,
      preHandler: listenerFree,
      schema: {
        tags,
        summary:
          'The listener’s connection: a WebSocket (JSON frames `ready`, `message`, `result`; see docs/api.md). Without an upgrade: 426',
        params: EndpointIdParams,
        response: {
          101: { description: 'Switching Protocols: the WebSocket is open', type: 'null' },
          ...errorResponses(401, 403, 404, 409, 426),
        },
      },
      wsHandler: onSocket,
      handler: async (_request, reply) => {
        reply.header('upgrade', 'websocket');
        throw new AppError('webhook_listener.upgrade_required', 'Connect to this URL with a WebSocket');
      },
    });
  };
}
