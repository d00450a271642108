import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { acceptRawBodies } from '../../http/raw-body.ts';
import { errorResponses, Id } from '../../http/schemas.ts';
import { requireUser } from '../accounts/access.ts';
import { getCompany, requireRole } from '../accounts/companies.ts';
import { managesMembers } from '../accounts/roles.ts';
import { saveLogo } from './branding.ts';
import { CompanySettingsSchema } from './schemas.ts';
import { presentRecipientSettings } from './settings.ts';

/** What the route reads before a 413: above the 1 MB rule, so that 422 names the rule. */
const UPLOAD_BODY_LIMIT = 2 * 1024 * 1024;
const ImageBytes = Type.Unknown({
  description: 'The image bytes (PNG, JPEG or WebP; the type is read from the bytes)',
});
const TenantParams = Type.Object({ tenant_id: Id(64) }, { additionalProperties: false });

/** PUT /v1/companies/{tenant_id}/branding/logo: a raw image body, its type read from the bytes. */
export function logoRoutes(ctx: AppContext): FastifyPluginAsyncTypebox {
  return async (app) => {
    acceptRawBodies(app, UPLOAD_BODY_LIMIT);
    app.put(
      '/v1/companies/:tenant_id/branding/logo',
      {
        config: { auth: 'session', rawBody: true },
        bodyLimit: UPLOAD_BODY_LIMIT,
        schema: {
          tags: ['Recipients'],
          summary:
            "Upload the company's logo for the tracking page and e-mail (raw PNG, JPEG or WebP, 1 MB at most)",
          description:
            'The type is read from the bytes, never the name or Content-Type; the pixels are re-encoded (no metadata survives) and scaled to 512 px at most. Anything else: 422 `branding.logo_invalid`, nothing stored.',
          params: TenantParams,
          consumes: ['image/png', 'image/jpeg', 'image/webp', 'application/octet-stream'],
          body: Type.Optional(ImageBytes),
          response: { 200: CompanySettingsSchema, ...errorResponses(401, 403, 404, 413, 422) },
        },
      },
      async (request) => {
        const userId = requireUser(request.principal).userId;
        const tenantId = request.params.tenant_id;
        await requireRole(ctx, userId, tenantId, managesMembers);
        const bytes = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        await saveLogo(ctx, tenantId, bytes);
        return {
          ...(await getCompany(ctx, tenantId)),
          ...(await presentRecipientSettings(ctx.db, tenantId)),
        };
      },
    );
  };
}
