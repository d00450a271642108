import type { FastifyInstance } from 'fastify';

/**
 * Inside a plugin: every body arrives as its raw bytes, whatever the Content-Type says, up to
 * `bodyLimit` (413 beyond). For routes that read the bytes themselves: an image whose type is
 * read from them, a message whose signature covers them.
 */
export function acceptRawBodies(
  app: Pick<FastifyInstance, 'removeAllContentTypeParsers' | 'addContentTypeParser'>,
  bodyLimit: number,
): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
}
