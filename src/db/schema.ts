import type { WebhooksTables } from '../delivery/tables.ts';
import type { AccountsTables } from '../modules/accounts/tables.ts';
import type { AppsTables } from '../modules/apps/tables.ts';
import type { ConsoleTables } from '../modules/console/tables.ts';
import type { InboundTables } from '../modules/inbound/tables.ts';
import type { MailTables } from '../modules/mail/tables.ts';
import type { OAuthTables } from '../modules/oauth/tables.ts';
import type { OutboundTables } from '../modules/outbound/tables.ts';
import type { PrivacyTables } from '../modules/privacy/tables.ts';
import type { RecipientsTables } from '../modules/recipients/tables.ts';
import type { ShipmentsTables } from '../modules/shipments/tables.ts';
import type { StoreTables } from '../modules/store/tables.ts';
import type { WebTables } from '../web/tables.ts';

/**
 * Every table, gathered from the module that owns it. Each tables.ts holds types only and imports
 * nothing of ours, so no module's types feed back into this file or src/context.ts through a loop.
 */
export interface Database
  extends AccountsTables,
    ShipmentsTables,
    WebhooksTables,
    OAuthTables,
    PrivacyTables,
    StoreTables,
    ConsoleTables,
    OutboundTables,
    AppsTables,
    MailTables,
    InboundTables,
    RecipientsTables,
    WebTables {}
