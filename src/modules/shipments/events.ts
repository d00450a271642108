import type { AppContext, StoredEvent, Trx } from '../../context.ts';
import { newId } from '../../lib/ids.ts';

/** Version label of every payload (spec 9.1): the first version, the one messages had before 2026-12-01. */
export const API_VERSION = '2026-11-01';

/** The event versions (decision 0025, docs/api.md "Versioning"), oldest first. */
export const API_VERSIONS = ['2026-11-01', '2026-12-01'] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

/** What a new endpoint, subscription or events URL is pinned to unless it asks for another. */
export const LATEST_API_VERSION: ApiVersion = '2026-12-01';

/**
 * Versions announced deprecated (decision 0025, 0081): from `deprecatedAt` a REST request naming
 * the version answers `Deprecation` (RFC 9745) and `Sunset` (RFC 8594) with these fixed dates, and
 * the owners see their endpoints still on it; after `sunsetAt` the version may be removed.
 */
export const DEPRECATED_VERSIONS: Partial<Record<ApiVersion, { deprecatedAt: Date; sunsetAt: Date }>> = {
  '2026-11-01': {
    deprecatedAt: new Date('2026-12-01T00:00:00.000Z'),
    sunsetAt: new Date('2027-06-01T00:00:00.000Z'),
  },
};

/** When a version goes away, if it is deprecated: null for one that is not. */
export function sunsetOf(version: ApiVersion): Date | null {
  return DEPRECATED_VERSIONS[version]?.sunsetAt ?? null;
}

export function isApiVersion(value: unknown): value is ApiVersion {
  return (API_VERSIONS as readonly unknown[]).includes(value);
}

export interface EnvelopeInput {
  type: string;
  tenantId: string;
  livemode: boolean;
  data: unknown;
  createdAt: Date;
  test?: boolean;
  /** The envelope's version; 2026-11-01 unless given. */
  apiVersion?: ApiVersion;
}

/** An event to record: its data in 2026-11-01 and, where it differs, in 2026-12-01. */
export interface RecordedEvent extends Omit<EnvelopeInput, 'apiVersion'> {
  shipmentId?: string | null;
  customerAccountId: string | null;
  /** The data of 2026-12-01 where it is not `data` (a shipment event's tracked shipment). */
  latest?: unknown;
  /** A type of 2026-12-01 only (shipment.checkpoint_added, eta_changed, stalled): `data` is its data. */
  latestOnly?: boolean;
}

/** The envelope of spec 2.6, serialised once: these bytes are what is signed and sent. */
export function buildEnvelope(input: EnvelopeInput & { id: string }): string {
  return JSON.stringify({
    id: input.id,
    type: input.type,
    api_version: input.apiVersion ?? API_VERSION,
    created_at: input.createdAt.toISOString(),
    tenant_id: input.tenantId,
    livemode: input.livemode,
    ...(input.test ? { test: true } : {}),
    data: input.data,
  });
}

/**
 * Writes event rows in the caller's transaction and hands them to the sinks (the webhooks
 * fan-out), so an event and its deliveries commit or vanish together.
 *
 * Versions (decision 0081): the event row keeps the envelope of 2026-11-01 (byte for byte as
 * before), or of 2026-12-01 for a type only that version has. The envelope of 2026-12-01 of an
 * event that has both is built once and stored beside it (`latest_payload`, migration 0097); the
 * fan-out evaluates the pinned targets' filters on it and marks their rows to send it, so a
 * replay resends the version it sent.
 */
export async function recordEvents(
  ctx: AppContext,
  trx: Trx,
  events: ReadonlyArray<RecordedEvent>,
): Promise<StoredEvent[]> {
  const stored: StoredEvent[] = events.map((event) => {
    const id = newId('evt');
    const { latest, latestOnly, ...envelope } = event;
    const latestPayload = buildEnvelope({
      ...envelope,
      id,
      data: latest === undefined ? event.data : latest,
      apiVersion: '2026-12-01',
    });
    return {
      id,
      type: event.type,
      tenantId: event.tenantId,
      livemode: event.livemode,
      customerAccountId: event.customerAccountId,
      payload: latestOnly ? latestPayload : buildEnvelope({ ...envelope, id }),
      latestPayload: latestOnly ? null : latestPayload,
      createdAt: event.createdAt,
    };
  });
  if (stored.length === 0) return stored;
  await trx
    .insertInto('events')
    .values(
      stored.map((event, i) => ({
        id: event.id,
        tenant_id: event.tenantId,
        livemode: event.livemode,
        type: event.type,
        shipment_id: events[i]?.shipmentId ?? null,
        customer_account_id: event.customerAccountId,
        payload: event.payload,
        latest_payload: event.latestPayload ?? null,
        created_at: event.createdAt,
      })),
    )
    .execute();
  for (const sink of ctx.eventSinks) await sink(trx, stored);
  return stored;
}
