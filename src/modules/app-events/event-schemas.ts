import { Type } from 'typebox';
import { Nullable, PrefixedId } from '../../http/schemas.ts';
import type { EventDefinition, ExampleContext } from '../webhooks/event-schema.ts';

const InstallationId = PrefixedId('inst', 'The installation: the app in this company or merchant account');
const CustomerAccountId = Nullable(PrefixedId('acct', 'A merchant account id'), {
  description: "The merchant account the installation belongs to; null for the company's own",
});

/** app.uninstalled (spec 2.7). */
export const AppUninstalledData = Type.Object(
  {
    installation_id: InstallationId,
    customer_account_id: CustomerAccountId,
    uninstalled_at: Type.String({ format: 'date-time', description: 'When the company removed the app' }),
  },
  {
    $id: 'AppUninstalledData',
    additionalProperties: false,
    description: 'The installation that was removed; its tokens and webhook endpoints no longer exist',
  },
);

const ScopeList = (description: string) =>
  Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true, description });

/** app.scopes_updated (CONTRACT.md, Apps as code: optional scopes). */
export const AppScopesUpdatedData = Type.Object(
  {
    installation_id: InstallationId,
    customer_account_id: CustomerAccountId,
    granted: ScopeList('Scopes the installation gained now (optional scopes the company approved)'),
    revoked: ScopeList('Scopes the installation lost now (given back by the app)'),
    scopes: ScopeList('Every scope the installation holds now'),
  },
  {
    $id: 'AppScopesUpdatedData',
    additionalProperties: false,
    description: "The installation's grant changed: what was added, what was given back and the result",
  },
);

/** customer.data_request and customer.redact (spec 2.7): one shape for both. */
export const PrivacyRequestData = Type.Object(
  {
    privacy_request_id: PrefixedId('prq', 'The privacy request; a request split over messages keeps one id'),
    installation_id: InstallationId,
    customer_account_id: CustomerAccountId,
    recipient: Type.Object(
      {
        email: Nullable(Type.String({ minLength: 1 }), { description: 'E-mail, trimmed and lower-cased' }),
        phone: Nullable(Type.String({ minLength: 1 }), {
          description: 'Phone, without spaces, dots, dashes and brackets',
        }),
      },
      { additionalProperties: false, description: 'The person the request is about (at least one is set)' },
    ),
    shipment_ids: Type.Array(PrefixedId('shp', 'A shipment id'), {
      maxItems: 500,
      description: 'Shipments of the recipient this installation can see, at most 500 a message (spec 2.7)',
    }),
    requested_at: Type.String({ format: 'date-time', description: 'When the company filed the request' }),
  },
  {
    $id: 'PrivacyRequestData',
    additionalProperties: false,
    description: "A recipient's privacy request and the shipments of theirs the app can see",
  },
);

const placeholders = (context: ExampleContext) => ({
  installation_id: 'inst_example000000000000000',
  customer_account_id: context.customerAccountId,
});

const privacyExample = (context: ExampleContext) => ({
  privacy_request_id: 'prq_example000000000000000',
  ...placeholders(context),
  recipient: { email: 'ada@example.com', phone: '+442079460000' },
  shipment_ids: ['shp_example0000000000000000'],
  requested_at: context.at.toISOString(),
});

/** The events an app receives at its events URL (spec section 6), as the catalogue lists them. */
export const APP_EVENTS = [
  {
    type: 'app.uninstalled',
    sentTo: 'app_events_url',
    description:
      'The company removed the app; its tokens and webhook endpoints no longer exist. Sent to the events URL of the app.',
    data: AppUninstalledData,
    example: (context) => ({ ...placeholders(context), uninstalled_at: context.at.toISOString() }),
  },
  {
    type: 'app.scopes_updated',
    sentTo: 'app_events_url',
    description:
      "An installation's grant changed: the company approved optional scopes the app asked for, or the app gave one back. Subscriptions and endpoints follow the new grant at once. Sent to the events URL of the app.",
    data: AppScopesUpdatedData,
    example: (context) => ({
      ...placeholders(context),
      granted: ['webhooks:write'],
      revoked: [],
      scopes: ['shipments:read', 'webhooks:write'],
    }),
  },
  {
    type: 'customer.data_request',
    sentTo: 'app_events_url',
    description:
      'A recipient asked the company for the data held about them: send the company what the app stores about the person.',
    data: PrivacyRequestData,
    example: privacyExample,
  },
  {
    type: 'customer.redact',
    sentTo: 'app_events_url',
    description:
      'A recipient asked to be erased: delete what the app stores about the person (keeping only what law requires).',
    data: PrivacyRequestData,
    example: privacyExample,
  },
] as const satisfies readonly EventDefinition[];
