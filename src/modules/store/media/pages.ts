import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../../context.ts';
import { AppError } from '../../../lib/errors.ts';
import { signedInPage } from '../../../web/dashboard.ts';
import { html } from '../../../web/html.ts';
import { sendPage } from '../../../web/layout.ts';
import { confirmationBody } from '../../../web/pages/confirm.ts';
import { appNotFound } from '../../apps/portal-pages.ts';
import { portalPage } from '../../apps/portal-views.ts';
import { type App, getApp } from '../../apps/service.ts';
import { invalidMedia, UPLOAD_BODY_LIMIT } from './images.ts';
import { addScreenshot, draftMedia, removeScreenshot, uploadIcon } from './service.ts';
import { imagePath, mediaManager } from './views.ts';

/** An HTML form's upload: its CSRF token and the chosen file, if any. */
interface UploadForm {
  _csrf?: string;
  image?: { bytes: Buffer; type: string | undefined };
}

/**
 * Reads a multipart/form-data body with the runtime's own parser (undici's, behind `Response`).
 * A body it cannot read gives an empty form: without its token the CSRF check refuses it.
 */
async function uploadForm(contentType: string | undefined, body: Buffer): Promise<UploadForm> {
  try {
    const form = await new Response(new Uint8Array(body), {
      headers: { 'content-type': contentType ?? '' },
    }).formData();
    const token = form.get('_csrf');
    const file = form.get('image');
    return {
      ...(typeof token === 'string' ? { _csrf: token } : {}),
      ...(file instanceof File && file.size > 0
        ? { image: { bytes: Buffer.from(await file.arrayBuffer()), type: file.type || undefined } }
        : {}),
    };
  } catch {
    return {};
  }
}

type AppRoute = { Params: { id: string } };
type UploadRoute = AppRoute & { Body: UploadForm };
type ScreenshotRoute = { Params: { id: string; name: string } };

/**
 * The developer portal's listing images: the page does what PUT/POST/DELETE under
 * /v1/developer/apps/{id}/listing-media do, through the same service functions, and shows their
 * refusals on the page.
 */
export function mediaPages(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const hide = { schema: { hide: true } };
    const post = { ...hide, preValidation: app.csrfProtection };
    const path = (found: App) => `/developer/apps/${found.id}/listing-media`;

    const show = async (
      reply: FastifyReply,
      found: App,
      userId: string,
      csrf: string,
      flash: { kind: 'ok' | 'error'; message: string } | null,
      status = 200,
    ) => {
      const set = await draftMedia(ctx, userId, found.id);
      return sendPage(reply, mediaManager({ csrf, flash }, found, set), status);
    };

    /** Runs one change; a refusal comes back as the page with the reason on top. */
    const change = async (
      reply: FastifyReply,
      found: App,
      userId: string,
      csrf: string,
      work: () => Promise<unknown>,
      done: string,
    ) => {
      try {
        await work();
      } catch (error) {
        if (error instanceof AppError && error.status < 500) {
          return show(reply, found, userId, csrf, { kind: 'error', message: error.message }, error.status);
        }
        throw error;
      }
      return reply.redirect(`${path(found)}?done=${done}`, 303);
    };

    const FLASHES: Record<string, string> = {
      icon: 'The icon is uploaded.',
      screenshot: 'The screenshot is added.',
      removed: 'The screenshot is removed.',
    };

    const chosen = (form: UploadForm | undefined) => {
      if (!form?.image) throw invalidMedia('Choose a PNG or JPEG file to upload');
      return form.image;
    };

    app.get<AppRoute & { Querystring: { done?: string } }>(
      '/developer/apps/:id/listing-media',
      hide,
      signedInPage<AppRoute & { Querystring: { done?: string } }>(
        ctx,
        appNotFound,
        async (userId, csrf, request, reply) => {
          const found = await getApp(ctx, userId, request.params.id.slice(0, 64));
          const message = FLASHES[request.query.done ?? ''];
          return show(reply, found, userId, csrf, message ? { kind: 'ok', message } : null);
        },
      ),
    );

    // The two uploads read multipart only (an HTML form's files), bounded as the API's raw uploads
    // are; the route's own parser stands for the input guard's form-only rule (`rawBody`).
    const upload = { ...post, config: { rawBody: true } };
    await app.register(async (uploads) => {
      uploads.removeAllContentTypeParsers();
      uploads.addContentTypeParser(
        'multipart/form-data',
        { parseAs: 'buffer', bodyLimit: UPLOAD_BODY_LIMIT },
        async (request: FastifyRequest, body: Buffer) => uploadForm(request.headers['content-type'], body),
      );

      const uploadRoute = (what: 'icon' | 'screenshots', store: typeof uploadIcon, done: string) =>
        uploads.post<UploadRoute>(
          `/developer/apps/:id/listing-media/${what}`,
          upload,
          signedInPage<UploadRoute>(ctx, appNotFound, async (userId, csrf, request, reply) => {
            const found = await getApp(ctx, userId, request.params.id.slice(0, 64));
            return change(
              reply,
              found,
              userId,
              csrf,
              async () => {
                const image = chosen(request.body);
                return store(ctx, userId, found.id, image.bytes, image.type);
              },
              done,
            );
          }),
        );
      uploadRoute('icon', uploadIcon, 'icon');
      uploadRoute('screenshots', addScreenshot, 'screenshot');
    });

    // The second question (CONTRACT.md, "The dashboard's manners"): a page of its own, by GET,
    // showing the screenshot and what goes with it; it changes nothing.
    app.get<ScreenshotRoute>(
      '/developer/apps/:id/listing-media/screenshots/:name/delete',
      hide,
      signedInPage<ScreenshotRoute>(ctx, appNotFound, async (userId, csrf, request, reply) => {
        const found = await getApp(ctx, userId, request.params.id.slice(0, 64));
        const set = await draftMedia(ctx, userId, found.id);
        const at = set.screenshots.findIndex((shot) => shot.name === request.params.name.slice(0, 100));
        const shot = set.screenshots[at];
        if (!shot) throw new AppError('listing_media.not_found');
        const question = `Remove screenshot ${at + 1} of ${found.name}?`;
        const body = confirmationBody(csrf, {
          question,
          lost: [
            'It leaves the images your next submission carries; to have it again, upload it again.',
            'The store keeps showing the images a reviewer approved until your next submission is approved.',
          ],
          detail: html`<p><img src="${imagePath(shot.url)}" alt="Screenshot ${at + 1}, to be removed" width="320"></p>`,
          action: `${path(found)}/screenshots/${encodeURIComponent(shot.name)}/delete`,
          confirm: `Remove screenshot ${at + 1}`,
          back: path(found),
        });
        return sendPage(reply, portalPage({ csrf }, question, body));
      }),
    );

    app.post<ScreenshotRoute & { Body: Record<string, string | undefined> | undefined }>(
      '/developer/apps/:id/listing-media/screenshots/:name/delete',
      post,
      signedInPage<ScreenshotRoute & { Body: Record<string, string | undefined> | undefined }>(
        ctx,
        appNotFound,
        async (userId, csrf, request, reply) => {
          const found = await getApp(ctx, userId, request.params.id.slice(0, 64));
          // Only the question's own form removes; anything else is sent to the question.
          if (request.body?.confirmed !== 'yes')
            return reply.redirect(
              `${path(found)}/screenshots/${encodeURIComponent(request.params.name.slice(0, 100))}/delete`,
              303,
            );
          return change(
            reply,
            found,
            userId,
            csrf,
            () => removeScreenshot(ctx, userId, found.id, request.params.name.slice(0, 100)),
            'removed',
          );
        },
      ),
    );
  };
}
