import { createRequire } from 'node:module';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsImport from 'ajv-formats';
import type * as SmolToml from 'smol-toml';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import type { Destination } from '../../delivery/destinations/spec.ts';
import { issuePath } from '../../http/errors.ts';
import { canonicalJson } from '../../lib/canonical-json.ts';
import { AppError, type FieldError, validationError } from '../../lib/errors.ts';
import { allows, SCOPES, type Scope } from '../accounts/roles.ts';
import { type ApiVersion, LATEST_API_VERSION } from '../shipments/events.ts';
import { notInVersion, typesNotInVersion } from '../webhooks/endpoints.ts';
import { EVENT_TYPES } from '../webhooks/event-types.ts';
import { filterProblems } from '../webhooks/filter.ts';
import {
  ApiVersionName,
  DestinationInput,
  EventFilterSchema,
  OrderingName,
  RateLimit,
} from '../webhooks/schemas.ts';
import { type AppPatch, assertEventsUrlAllowed, checkAppFields } from './fields.ts';
import { type SealedDestinations, subscriptionDestination } from './subscription-destination.ts';
import { MAX_URL_LENGTH } from './urls.ts';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;
const strict = { additionalProperties: false } as const;
const Url = Type.String({ maxLength: MAX_URL_LENGTH * 2 });
const Link = Type.Optional(Type.Union([Url, Type.Null()]));
const ScopeList = Type.Array(Type.String({ maxLength: 64 }), { maxItems: 20 });

export const MAX_SUBSCRIPTIONS = 20;

const FilterSchema = EventFilterSchema;

export const SubscriptionSchema = Type.Object(
  {
    event_types: Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 50 }),
    url: Type.Optional(Url),
    destination: Type.Optional(DestinationInput),
    filter: Type.Optional(Type.Union([FilterSchema, Type.Null()])),
    test_events: Type.Optional(
      Type.Boolean({ default: false, description: 'Sandbox events too; live ones only by default' }),
    ),
    rate_limit: Type.Optional(RateLimit),
    ordering: Type.Optional(OrderingName),
    api_version: Type.Optional(ApiVersionName),
  },
  strict,
);

export const ManifestSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100 }),
    description: Type.String({ minLength: 1, maxLength: 1000 }),
    homepage_url: Link,
    privacy_url: Link,
    support_url: Link,
    redirect_uris: Type.Array(Url, { maxItems: 50 }),
    scopes: ScopeList,
    optional_scopes: Type.Optional(ScopeList),
    events_url: Link,
    subscriptions: Type.Optional(Type.Array(SubscriptionSchema, { maxItems: MAX_SUBSCRIPTIONS })),
  },
  { ...strict, $id: 'AppManifest', description: "An app's configuration (waybill.app.toml)" },
);

export interface Subscription {
  event_types: string[];
  /** The HTTPS URL, or a broker destination's URL with its password masked (as an endpoint's). */
  url: string;
  /** A broker destination, its password masked; its credentials are in the version's destinations_sealed. */
  destination?: Destination;
  filter: Record<string, unknown> | null;
  test_events: boolean;
  /** As an endpoint's, for each installation's target; kept in the manifest only when given. */
  rate_limit?: number | null;
  /** As an endpoint's, for each installation's target; kept only when `per_shipment`. */
  ordering?: 'none' | 'per_shipment';
  /**
   * The event version of its messages (decision 0081). Absent in manifests stored before it:
   * those are 2026-11-01 (subscriptionVersion).
   */
  api_version?: ApiVersion;
}

/** A subscription's version: what it says, or 2026-11-01 for one stored before versions. */
export function subscriptionVersion(
  subscription: Pick<Subscription, 'api_version'> | null | undefined,
): ApiVersion {
  return subscription?.api_version ?? '2026-11-01';
}

/** A manifest as stored: every field present, normalized as PATCH normalizes the app's fields. */
export interface Manifest {
  name: string;
  description: string;
  homepage_url: string | null;
  privacy_url: string | null;
  support_url: string | null;
  redirect_uris: string[];
  scopes: Scope[];
  optional_scopes: Scope[];
  events_url: string | null;
  subscriptions: Subscription[];
}

/** The manifest fields that are app fields: what a release writes to the app. */
export const APP_FIELDS = [
  'name',
  'description',
  'homepage_url',
  'privacy_url',
  'support_url',
  'redirect_uris',
  'scopes',
  'events_url',
] as const;

const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: false, removeAdditional: false });
addFormats(ajv);
const validateShape = ajv.compile(ManifestSchema);

function ajvErrors(errors: readonly ErrorObject[] | null | undefined, base: string): FieldError[] {
  return (errors ?? []).map((issue) => ({
    path: `${base}${issuePath(issue)}`,
    message:
      typeof (issue.params as { additionalProperty?: unknown }).additionalProperty === 'string'
        ? 'is not a manifest field'
        : (issue.message ?? 'is not valid'),
  }));
}

/** The scope an event type needs (the database's `event_type_scope`, migration 0033). */
export function eventTypeScope(type: string): Scope | null {
  if (type === 'app.uninstalled') return null;
  if (type.startsWith('webhook_endpoint.')) return 'webhooks:read';
  return 'shipments:read';
}

function relocated(error: unknown, base: string): FieldError[] | null {
  if (!(error instanceof AppError)) return null;
  const errors = error.extra.errors as FieldError[] | undefined;
  return errors ? errors.map((e) => ({ path: `${base}${e.path}`, message: e.message })) : null;
}

/**
 * Checks a manifest as it arrives (`base` is where it sits in the request, `/manifest`) and
 * returns it normalized. Every problem is gathered with its path: 422 `validation.failed`, or
 * `filter.unknown_path` when the only problems are filter paths the event types lack, or
 * `app_config.scope_missing` when a subscribed type needs a scope the manifest does not ask for.
 */
export async function checkManifest(
  ctx: AppContext,
  input: unknown,
  base = '/manifest',
  before: SealedDestinations = [],
  /** The active version's subscriptions: one that does not say its api_version keeps the one at its place. */
  activeSubscriptions: ReadonlyArray<Subscription> = [],
): Promise<{ manifest: Manifest; destinations: SealedDestinations }> {
  if (!validateShape(input))
    throw validationError(ajvErrors(validateShape.errors, base), 'The manifest is not valid', 422);
  const raw = input as unknown as Record<string, unknown> & {
    subscriptions?: Array<Record<string, unknown>>;
  };
  const errors: FieldError[] = [];
  const fields = Object.fromEntries(APP_FIELDS.map((field) => [field, raw[field] ?? null])) as AppPatch;
  let normalized: AppPatch = {};
  try {
    normalized = checkAppFields(ctx, fields);
  } catch (error) {
    const moved = relocated(error, base);
    if (!moved) throw error;
    errors.push(...moved);
  }
  try {
    await assertEventsUrlAllowed(ctx, normalized.events_url);
  } catch (error) {
    const moved = relocated(error, base);
    if (!moved) throw error;
    errors.push(...moved);
  }
  const optional = (raw.optional_scopes as string[] | undefined) ?? [];
  optional.forEach((scope, index) => {
    if (!(SCOPES as readonly string[]).includes(scope)) {
      errors.push({
        path: `${base}/optional_scopes/${index}`,
        message: `must be one of ${SCOPES.join(', ')}`,
      });
    }
  });
  const subscriptions: Subscription[] = [];
  const destinations: SealedDestinations = [];
  const unknownPaths: FieldError[] = [];
  const missingScopes: FieldError[] = [];
  const notInItsVersion: FieldError[] = [];
  const scopes = new Set((normalized.scopes ?? []) as Scope[]);
  for (const [index, subscription] of (raw.subscriptions ?? []).entries()) {
    const at = `${base}/subscriptions/${index}`;
    const types = subscription.event_types as string[];
    // As an endpoint: a new subscription gets the latest; one the active version has at this
    // place keeps its own, so that deploying the same file again changes no message's shape.
    const apiVersion =
      (subscription.api_version as ApiVersion | undefined) ??
      (activeSubscriptions[index] ? subscriptionVersion(activeSubscriptions[index]) : LATEST_API_VERSION);
    const known = types.filter((type) => (EVENT_TYPES as readonly string[]).includes(type));
    notInItsVersion.push(
      ...typesNotInVersion(types, apiVersion, at).filter((e) => {
        const i = Number(e.path.split('/').at(-1));
        return known.includes(types[i] as string);
      }),
    );
    types.forEach((type, i) => {
      if (!(EVENT_TYPES as readonly string[]).includes(type)) {
        errors.push({
          path: `${at}/event_types/${i}`,
          message: `is not an event type: one of ${EVENT_TYPES.join(', ')}`,
        });
        return;
      }
      const needed = eventTypeScope(type);
      if (needed && !allows(scopes, needed)) {
        missingScopes.push({
          path: `${at}/event_types/${i}`,
          message: `${type} needs the scope ${needed} in scopes`,
        });
      }
    });
    // Where its messages go: an HTTPS URL, or a broker destination checked as an endpoint's.
    const target = await subscriptionDestination(ctx, subscription, at, before[index] ?? null);
    errors.push(...target.errors);
    destinations.push(target.sealed);
    const url = target.url;
    const filter = filterProblems(subscription.filter, known, `${at}/filter`, apiVersion);
    errors.push(...filter.errors);
    unknownPaths.push(...filter.unknownPaths);
    subscriptions.push({
      event_types: [...new Set(types)],
      url,
      ...(target.destination ? { destination: target.destination } : {}),
      filter: filter.compiled ? (subscription.filter as Record<string, unknown>) : null,
      test_events: subscription.test_events === true,
      ...(subscription.rate_limit != null ? { rate_limit: subscription.rate_limit as number } : {}),
      ...(subscription.ordering === 'per_shipment' ? { ordering: 'per_shipment' as const } : {}),
      api_version: apiVersion,
    });
  }
  if (errors.length > 0)
    throw validationError([...errors, ...unknownPaths, ...missingScopes], 'The manifest is not valid', 422);
  if (notInItsVersion.length > 0) throw notInVersion(notInItsVersion);
  if (unknownPaths.length > 0) {
    throw new AppError(
      'filter.unknown_path',
      `The filter names paths the event types do not have: ${unknownPaths.map((e) => e.path).join(', ')}`,
      { errors: unknownPaths },
    );
  }
  if (missingScopes.length > 0) {
    throw new AppError(
      'app_config.scope_missing',
      `Subscribed event types need scopes the manifest does not ask for: ${missingScopes.map((e) => e.message).join('; ')}`,
      { errors: missingScopes },
    );
  }
  const manifest: Manifest = {
    name: normalized.name as string,
    description: normalized.description as string,
    homepage_url: normalized.homepage_url ?? null,
    privacy_url: normalized.privacy_url ?? null,
    support_url: normalized.support_url ?? null,
    redirect_uris: normalized.redirect_uris as string[],
    scopes: normalized.scopes as Scope[],
    optional_scopes: SCOPES.filter((scope) => optional.includes(scope) && !scopes.has(scope)),
    events_url: normalized.events_url ?? null,
    subscriptions,
  };
  return { manifest, destinations };
}

export interface Change {
  path: string;
  from: unknown;
  to: unknown;
}

/** The changes from one manifest to the next: each app field, and each subscription by position. */
export function manifestChanges(before: Manifest | null, after: Manifest): Change[] {
  const changes: Change[] = [];
  // Key order means nothing: a filter written in another order is the same filter.
  const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);
  for (const field of [...APP_FIELDS, 'optional_scopes'] as const) {
    const from = before ? before[field] : null;
    if (!same(from, after[field])) changes.push({ path: `/${field}`, from, to: after[field] });
  }
  // A subscription stored before versions is 2026-11-01: saying so is no change.
  const old = (before?.subscriptions ?? []).map((s) => ({ ...s, api_version: subscriptionVersion(s) }));
  for (let index = 0; index < Math.max(old.length, after.subscriptions.length); index += 1) {
    const from = old[index] ?? null;
    const to = after.subscriptions[index] ?? null;
    if (!same(from, to)) changes.push({ path: `/subscriptions/${index}`, from, to });
  }
  return changes;
}

/**
 * A manifest as waybill.app.toml, the file `waybill app deploy` reads: `app_id` first, then the
 * fields; a field without a value (null) is left out, as TOML has no null.
 */
export function manifestToml(appId: string, manifest: Manifest): string {
  // The TOML writer is loaded when a page first shows a manifest, not at start (issue 41 item 4).
  const { stringify: stringifyToml } = createRequire(import.meta.url)('smol-toml') as typeof SmolToml;
  const present = Object.entries(manifest).filter(([, value]) => value !== null);
  // A broker subscription's URL is in its destination (masked): deploying the file keeps the password.
  const subscriptions = manifest.subscriptions.map(({ filter, ...rest }) => {
    const { url: _masked, ...broker } = rest;
    return { ...(rest.destination ? broker : rest), ...(filter ? { filter } : {}) };
  });
  const fields = Object.fromEntries(
    present.map(([key, value]) => [key, key === 'subscriptions' ? subscriptions : value]),
  );
  return `# ${manifest.name}: waybill app deploy sends this file as a new version\n${stringifyToml({ app_id: appId, ...fields })}`;
}
