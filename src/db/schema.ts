import type { AccountsTables } from '../modules/accounts/tables.ts';
import type { ShipmentsTables } from '../modules/shipments/tables.ts';

/** Every table, gathered from the module that owns it. */
export interface Database extends AccountsTables, ShipmentsTables {}
