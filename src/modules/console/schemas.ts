import { Type } from 'typebox';
import { Nullable, Timestamp } from '../../http/schemas.ts';
import { MAX_LIMIT } from '../../lib/paging.ts';

const Status = (options: { description?: string } = {}) =>
  Type.Union(
    [
      Type.Literal('active'),
      Type.Literal('needs_approval'),
      Type.Literal('suspended'),
      Type.Literal('uninstalled'),
    ],
    options,
  );
const Window = (options: { default?: string; description?: string } = {}) =>
  Type.Union([Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d')], options);

export const AppInstallationsQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_LIMIT, default: 20 })),
    cursor: Type.Optional(Type.String({ maxLength: 512 })),
    status: Type.Optional(Status()),
  },
  { additionalProperties: false },
);

export const AppInstallationSchema = Type.Object(
  {
    id: Type.String(),
    tenant_id: Type.String(),
    company_name: Type.String(),
    customer_account_id: Nullable(Type.String()),
    scopes: Type.Array(Type.String()),
    status: Status({
      description:
        'active; needs_approval: the person who approved left the company, and nothing flows until someone approves again; suspended: the app is; uninstalled',
    }),
    installed_at: Timestamp,
    uninstalled_at: Nullable(Timestamp),
    uninstall_reason: Nullable(Type.String(), {
      description: "The company's reason, given when it uninstalled",
    }),
  },
  { $id: 'AppInstallation' },
);

export const AppStatsQuery = Type.Object(
  {
    window: Type.Optional(
      Window({
        default: '7d',
        description:
          'The current UTC hour and the 23 before (24h, by hour), or the current UTC day and the 6 or 29 before (by day)',
      }),
    ),
  },
  { additionalProperties: false },
);

const Count = Type.Integer({ minimum: 0 });
const Rate = Nullable(Type.Number({ minimum: 0, maximum: 1 }), {
  description: 'Share answered 2xx; null without attempts',
});

export const AppStatsSchema = Type.Object(
  {
    window: Window(),
    from: Timestamp,
    installations: Type.Object({
      active: Type.Integer({ description: 'Active installations now' }),
      installed: Type.Integer({ description: 'Installed in the window' }),
      uninstalled: Type.Integer({ description: 'Uninstalled in the window' }),
    }),
    api: Type.Object({
      requests: Type.Integer({ description: "API requests made with the app's access tokens" }),
      by_status: Type.Object({ '2xx': Count, '4xx': Count, '5xx': Count }),
      top_errors: Type.Array(Type.Object({ code: Type.String(), count: Count }), {
        description: 'The most frequent problem codes answered to the app, at most 5',
      }),
    }),
    tokens: Type.Object({
      issued: Type.Integer({ description: 'Tokens issued for an authorization code' }),
      refreshed: Type.Integer({ description: 'Tokens issued for a refresh token' }),
      invalid_grant: Type.Integer({
        description:
          'Token requests refused with invalid_grant after the client proved itself with its secret',
      }),
      invalid_grant_anonymous: Type.Integer({
        description:
          'Token requests refused with invalid_grant that carried no client secret (a public client, or anyone naming its client_id): counted apart, since anyone can cause them',
      }),
    }),
    app_events: Type.Object({ attempts: Count, success_rate: Rate }),
    endpoints: Type.Object({
      attempts: Type.Integer({ description: "Attempts to the webhook endpoints of the app's installations" }),
      success_rate: Rate,
      failing: Type.Integer({
        description: 'Of those endpoints, the ones failing or disabled by failure now',
      }),
    }),
    subscriptions: Type.Object({
      attempts: Type.Integer({
        description: "Attempts of the app's subscriptions, to every installation (apps as code)",
      }),
      success_rate: Rate,
      failing: Type.Integer({
        description: 'Installations whose subscription target is failing or disabled by failure now',
      }),
    }),
    daily: Type.Array(
      Type.Object({
        at: Timestamp,
        installs: Count,
        uninstalls: Count,
        api_requests: Count,
        api_errors: Count,
      }),
      { description: 'One entry per hour (24h) or day (7d, 30d), oldest first, empty ones included' },
    ),
  },
  { $id: 'AppStats' },
);
