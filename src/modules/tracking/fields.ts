import type { Static } from 'typebox';
import { AppError, type ProblemCode } from '../../lib/errors.ts';
import { isCountry, subStatusOf } from './catalogue.ts';
import type {
  CarrierSchema,
  CheckpointSchema,
  DestinationSchema,
  EstimatedDeliverySchema,
  LocationSchema,
  ProofOfDeliverySchema,
} from './schemas.ts';

export type Carrier = Static<typeof CarrierSchema>;
export type DestinationInput = Static<typeof DestinationSchema>;
export type LocationInput = Static<typeof LocationSchema>;
export type EstimatedDelivery = Static<typeof EstimatedDeliverySchema>;
export type ProofOfDeliveryInput = Static<typeof ProofOfDeliverySchema>;
export type Checkpoint = Static<typeof CheckpointSchema>;

export interface Destination {
  line1: string | null;
  city: string | null;
  region: string | null;
  postal_code: string | null;
  country: string;
}

export interface Location {
  city: string | null;
  region: string | null;
  postal_code: string | null;
  country: string | null;
  lat: number | null;
  lng: number | null;
}

export interface ProofOfDelivery {
  method: ProofOfDeliveryInput['method'];
  signed_by: string | null;
  received_at: string;
}

/** A 422 naming one field (CONTRACT.md, Conventions: a stable code and the field's path). */
export function fieldProblem(code: ProblemCode, path: string, message: string): AppError {
  return new AppError(code, `${path.slice(1).replaceAll('/', '.')}: ${message}`, {
    errors: [{ path, message }],
  });
}

/** An ISO 8601 time, as answers carry it: UTC with milliseconds. */
export function utc(value: string): string {
  return new Date(value).toISOString();
}

function country(value: string, path: string): string {
  const code = value.toUpperCase();
  if (!isCountry(code))
    throw fieldProblem('tracking.invalid_country', path, 'must be an ISO 3166-1 alpha-2 code');
  return code;
}

export function normaliseDestination(
  input: DestinationInput | null,
  path = '/destination',
): Destination | null {
  if (!input) return null;
  return {
    line1: input.line1 ?? null,
    city: input.city ?? null,
    region: input.region ?? null,
    postal_code: input.postal_code ?? null,
    country: country(input.country, `${path}/country`),
  };
}

export function normaliseLocation(
  input: LocationInput | null | undefined,
  path = '/location',
): Location | null {
  if (!input) return null;
  return {
    city: input.city ?? null,
    region: input.region ?? null,
    postal_code: input.postal_code ?? null,
    country: input.country ? country(input.country, `${path}/country`) : null,
    lat: input.lat ?? null,
    lng: input.lng ?? null,
  };
}

export function normaliseEstimate(
  input: EstimatedDelivery | null | undefined,
  path = '/estimated_delivery',
): EstimatedDelivery | null {
  if (!input) return null;
  const earliest = utc(input.earliest);
  const latest = utc(input.latest);
  if (earliest > latest)
    throw fieldProblem('tracking.invalid_estimated_delivery', `${path}/earliest`, 'must not be after latest');
  return { earliest, latest, source: input.source };
}

export function normaliseProof(input: ProofOfDeliveryInput | null | undefined): ProofOfDelivery | null {
  if (!input) return null;
  return { method: input.method, signed_by: input.signed_by ?? null, received_at: utc(input.received_at) };
}

/** A sub-status must be a catalogue code of the status it goes with (422 tracking.invalid_sub_status). */
export function checkSubStatus(
  code: string | null | undefined,
  status: string,
  path = '/sub_status',
): string | null {
  if (code === null || code === undefined) return null;
  const owner = subStatusOf(code);
  if (!owner)
    throw fieldProblem('tracking.invalid_sub_status', path, 'not a code of GET /v1/shipment-sub-statuses');
  if (owner !== status)
    throw fieldProblem('tracking.invalid_sub_status', path, `belongs to the status ${owner}, not ${status}`);
  return code;
}

/** Proof of delivery goes with a delivered shipment (422 tracking.proof_before_delivery). */
export function checkProof(proof: ProofOfDelivery | null, status: string): ProofOfDelivery | null {
  if (proof && status !== 'delivered')
    throw fieldProblem(
      'tracking.proof_before_delivery',
      '/proof_of_delivery',
      'only once the status is delivered',
    );
  return proof;
}

export function checkMessage(message: string): string {
  if ([...message].length > 500)
    throw fieldProblem('tracking.invalid_message', '/message', 'at most 500 characters');
  return message;
}

/** jsonb as the drivers return it: parsed already (PostgreSQL) or text (some paths). */
export function fromJson<T>(value: unknown): T | null {
  if (value === null || value === undefined) return null;
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** A jsonb column's value to write: JSON text, or null. */
export function toJson(value: unknown): string | null {
  return value === null || value === undefined ? null : JSON.stringify(value);
}

/** Two estimates the same (both null included)? */
export function sameEstimate(a: EstimatedDelivery | null, b: EstimatedDelivery | null): boolean {
  if (!a || !b) return a === b;
  return a.earliest === b.earliest && a.latest === b.latest && a.source === b.source;
}
