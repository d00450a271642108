import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { AppContext } from '../../../context.ts';
import { acceptRawBodies } from '../../../http/raw-body.ts';
import { errorResponses } from '../../../http/schemas.ts';
import { pageUser } from '../../../web/session.ts';
import { requireUser } from '../../accounts/access.ts';
import { requireReviewer } from '../../apps/moderation.ts';
import { AppParams } from '../../apps/schemas.ts';
import { UPLOAD_BODY_LIMIT } from './images.ts';
import { MediaParams, MediaSetSchema, RawImageBody } from './schemas.ts';
import { addScreenshot, draftMedia, removeScreenshot, serveMedia, uploadIcon } from './service.ts';

const YEAR_SECONDS = 365 * 24 * 3600;
const ImageBytes = Type.Unsafe<Buffer>({ type: 'string', format: 'binary' });
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'application/octet-stream'];

function bodyBytes(body: unknown): Buffer {
  return Buffer.isBuffer(body) ? body : Buffer.alloc(0);
}

/**
 * Listing media (CONTRACT.md "Store trust"): the developer uploads raw image bodies; the store
 * serves them by a name that holds the content hash, cached for a year.
 */
export function mediaRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    // Raw bytes of whatever type the client says: the type is read from the bytes (media.ts).
    acceptRawBodies(app, UPLOAD_BODY_LIMIT);

    const developer: FastifyPluginAsyncTypebox = async (scoped) => {
      scoped.addHook('preValidation', async (request) => {
        requireUser(request.principal);
      });
      const upload = { auth: 'session' as const, rawBody: true };
      const tags = ['Developer'];

      scoped.get(
        '/v1/developer/apps/:id/listing-media',
        {
          config: { auth: 'session' },
          schema: {
            tags,
            summary: 'The icon and screenshots the next submission carries',
            params: AppParams,
            response: { 200: MediaSetSchema, ...errorResponses(401, 403, 404) },
          },
        },
        async (request) => draftMedia(ctx, requireUser(request.principal).userId, request.params.id),
      );

      scoped.put(
        '/v1/developer/apps/:id/listing-media/icon',
        {
          config: upload,
          bodyLimit: UPLOAD_BODY_LIMIT,
          schema: {
            tags,
            summary: 'Upload the icon (raw PNG or JPEG body, square, 256 to 1024 px, 1 MB at most)',
            description:
              'The type is read from the bytes; a Content-Type of image/png or image/jpeg must agree with them. Metadata (EXIF and the like) is stripped by re-encoding. Anything else: 422 `listing_media.invalid`, nothing stored.',
            params: AppParams,
            consumes: IMAGE_TYPES,
            body: RawImageBody,
            response: { 200: MediaSetSchema, ...errorResponses(401, 403, 404, 413, 422) },
          },
        },
        async (request) =>
          uploadIcon(
            ctx,
            requireUser(request.principal).userId,
            request.params.id,
            bodyBytes(request.body),
            request.headers['content-type'],
          ),
      );

      scoped.post(
        '/v1/developer/apps/:id/listing-media/screenshots',
        {
          config: upload,
          bodyLimit: UPLOAD_BODY_LIMIT,
          schema: {
            tags,
            summary:
              'Add a screenshot (raw PNG or JPEG body, 16:9, 1280 to 2560 px wide, 2 MB at most; 6 at most)',
            params: AppParams,
            consumes: IMAGE_TYPES,
            body: RawImageBody,
            response: { 201: MediaSetSchema, ...errorResponses(401, 403, 404, 413, 422) },
          },
        },
        async (request, reply) =>
          reply
            .code(201)
            .send(
              await addScreenshot(
                ctx,
                requireUser(request.principal).userId,
                request.params.id,
                bodyBytes(request.body),
                request.headers['content-type'],
              ),
            ),
      );

      scoped.delete(
        '/v1/developer/apps/:id/listing-media/screenshots/:name',
        {
          config: { auth: 'session' },
          schema: {
            tags,
            summary: 'Take a screenshot out of the next submission',
            params: MediaParams,
            response: { 204: Type.Null(), ...errorResponses(401, 403, 404) },
          },
        },
        async (request, reply) => {
          await removeScreenshot(
            ctx,
            requireUser(request.principal).userId,
            request.params.id,
            request.params.name,
          );
          return reply.code(204).send(null);
        },
      );
    };
    await app.register(developer);

    /** The developer (their own app) and reviewers see media that is not published yet. */
    async function mayPreview(request: FastifyRequest, developerId: string): Promise<boolean> {
      const principal = request.principal;
      const userId =
        principal?.kind === 'user' ? principal.userId : ((await pageUser(ctx, request))?.userId ?? null);
      if (!userId) return false;
      if (userId === developerId) return true;
      return requireReviewer(ctx, userId).then(
        () => true,
        () => false,
      );
    }

    app.get(
      '/v1/store/apps/:id/media/:name',
      {
        config: { auth: 'public' },
        schema: {
          tags: ['App Store'],
          summary: 'A listing image, by a name that holds its content hash (cached for a year)',
          description:
            'Images of the published listing are public. Images of a submission not yet approved are shown to the developer and reviewers only (a session token or the session cookie).',
          params: MediaParams,
          response: {
            200: {
              description: 'The image',
              content: {
                'image/png': { schema: ImageBytes },
                'image/jpeg': { schema: ImageBytes },
              },
            },
            ...errorResponses(400, 404),
          },
        },
      },
      async (request, reply) => {
        const media = await serveMedia(ctx, request.params.id, request.params.name, (developerId) =>
          mayPreview(request, developerId),
        );
        return reply
          .header('content-type', media.content_type)
          .header(
            'cache-control',
            `${media.public ? 'public' : 'private'}, max-age=${YEAR_SECONDS}, immutable`,
          )
          .header('x-content-type-options', 'nosniff')
          .header('content-disposition', 'inline')
          .send(Buffer.from(media.content));
      },
    );
  };
}
