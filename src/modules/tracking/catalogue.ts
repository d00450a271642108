import type { ShipmentStatus } from '../shipments/lifecycle.ts';

/**
 * The sub-status catalogue (CONTRACT.md, Tracking): each code details one status and is allowed
 * only with it. Published at GET /v1/shipment-sub-statuses; a code is never renamed or removed
 * within an API version (add new ones only).
 */
export const SUB_STATUSES = [
  ['confirmed.label_created', 'confirmed', 'The label is printed; the carrier does not have the parcel yet'],
  ['confirmed.awaiting_pickup', 'confirmed', 'The parcel waits for the carrier to collect it'],
  ['picked_up.from_sender', 'picked_up', 'The carrier collected the parcel from the sender'],
  ['picked_up.dropped_off', 'picked_up', 'The sender dropped the parcel off at a carrier point'],
  ['in_transit.departed_facility', 'in_transit', 'The parcel left a carrier facility'],
  ['in_transit.arrived_facility', 'in_transit', 'The parcel arrived at a carrier facility'],
  ['in_transit.customs', 'in_transit', 'The parcel is in customs clearance'],
  ['in_transit.delayed', 'in_transit', 'The parcel is late on its way'],
  ['in_transit.handed_to_partner', 'in_transit', 'The carrier handed the parcel to a partner carrier'],
  ['out_for_delivery.on_vehicle', 'out_for_delivery', 'The parcel is on the delivery vehicle'],
  ['out_for_delivery.attempted', 'out_for_delivery', 'A delivery was attempted; the carrier tries again'],
  [
    'out_for_delivery.rescheduled',
    'out_for_delivery',
    'The delivery moved to another day at the recipient’s wish',
  ],
  ['delivered.recipient', 'delivered', 'Handed to the recipient'],
  ['delivered.neighbour', 'delivered', 'Left with a neighbour'],
  ['delivered.locker', 'delivered', 'Placed in a parcel locker'],
  ['delivered.pickup_point', 'delivered', 'Collected by the recipient at a pickup point'],
  ['delivered.safe_place', 'delivered', 'Left at the safe place the recipient named'],
  ['exception.address_issue', 'exception', 'The address is wrong or incomplete'],
  ['exception.recipient_unavailable', 'exception', 'Nobody took the parcel after the last attempt'],
  ['exception.refused', 'exception', 'The recipient refused the parcel'],
  ['exception.customs_hold', 'exception', 'Customs hold the parcel'],
  ['exception.damaged', 'exception', 'The parcel is damaged'],
  ['exception.lost', 'exception', 'The carrier cannot find the parcel'],
  ['exception.weather', 'exception', 'Weather or another force stopped the parcel'],
  ['returned.to_sender', 'returned', 'The parcel went back to the sender'],
  ['returned.refused', 'returned', 'Returned after the recipient refused it'],
  ['cancelled.by_sender', 'cancelled', 'The sender cancelled the shipment'],
] as const satisfies ReadonlyArray<readonly [string, ShipmentStatus, string]>;

export type SubStatusCode = (typeof SUB_STATUSES)[number][0];

const STATUS_OF: ReadonlyMap<string, ShipmentStatus> = new Map(
  SUB_STATUSES.map(([code, status]) => [code, status]),
);

/** The status a sub-status belongs to, or undefined for a code not in the catalogue. */
export function subStatusOf(code: string): ShipmentStatus | undefined {
  return STATUS_OF.get(code);
}

export function subStatusCatalogue(): Array<{ code: string; status: ShipmentStatus; description: string }> {
  return SUB_STATUSES.map(([code, status, description]) => ({ code, status, description }));
}

/** ISO 3166-1 alpha-2, the officially assigned codes (the runtime's region names accept more). */
const COUNTRIES: ReadonlySet<string> = new Set(
  `AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY
  BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM
  FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT
  JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN
  MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT
  PW PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL
  TM TN TO TR TT TV TW TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW`.split(/\s+/),
);

export function isCountry(code: string): boolean {
  return COUNTRIES.has(code);
}
