import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsImport from 'ajv-formats';
import { type Static, type TObject, Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { schemaFieldErrors } from '../../http/errors.ts';
import { AppError } from '../../lib/errors.ts';
import { canSee, type TenantAccess } from '../accounts/access.ts';
import type { Scope } from '../accounts/roles.ts';
import { SHIPMENT_STATUSES } from '../shipments/lifecycle.ts';
import { ExceptionReasonName, StatusName } from '../shipments/schemas.ts';
import {
  getShipment,
  listEvents,
  listShipments,
  moveShipment,
  presentTrackedShipment,
} from '../shipments/service.ts';
import { applyCheckpoint, recentCheckpoints, targetOf } from '../tracking/checkpoints.ts';
import { CheckpointBody } from '../tracking/schemas.ts';
import { listDeliveries } from '../webhooks/deliveries.ts';
import { replayDelivery } from '../webhooks/replay.ts';

const addFormats = addFormatsImport as unknown as (ajv: Ajv) => Ajv;

/**
 * The five tools of CONTRACT.md (Agents). Each is a thin call into the service the REST route calls,
 * with the caller's access from its token: no second implementation of any rule, and no tenant,
 * merchant or mode among the arguments.
 */
export interface Tool<S extends TObject = TObject> {
  name: string;
  title: string;
  description: string;
  /** The scope a call needs (a write scope includes its read). */
  scope: Scope;
  input: S;
  annotations: {
    readOnlyHint: boolean;
    destructiveHint: boolean;
    idempotentHint: boolean;
    openWorldHint: boolean;
  };
  run(
    ctx: AppContext,
    access: TenantAccess,
    args: Static<S>,
  ): Promise<{ result: Record<string, unknown>; text: string }>;
}

const Limit = (max: number, def: number) =>
  Type.Integer({ minimum: 1, maximum: max, default: def, description: `At most ${max}; ${def} when absent` });

const SearchInput = Type.Object(
  {
    status: Type.Optional(StatusName),
    query: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 200,
        description: 'A tracking number or external_ref (exact), or the start of the recipient name',
      }),
    ),
    customer_account_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    updated_after: Type.Optional(Type.String({ format: 'date-time', description: 'ISO 8601 time' })),
    limit: Type.Optional(Limit(50, 20)),
    cursor: Type.Optional(
      Type.String({ minLength: 1, maxLength: 200, description: 'next_cursor of the page before' }),
    ),
  },
  { additionalProperties: false },
);

const GetInput = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'The shipment id, shp_...' })),
    tracking_number: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
);

const UpdateInput = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64, description: 'The shipment id, shp_...' }),
    status: StatusName,
    exception_reason: Type.Optional(ExceptionReasonName),
  },
  { additionalProperties: false },
);

const AddCheckpointInput = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64, description: 'The shipment id, shp_...' }),
    ...CheckpointBody.properties,
  },
  { additionalProperties: false },
);

/** How many checkpoints of a shipment the tools return: the newest. */
const TIMELINE = 20;

const DeliveryStatusName = Type.Union(
  ['pending', 'succeeded', 'failed', 'cancelled'].map((s) => Type.Literal(s as 'failed')),
);

const ListDeliveriesInput = Type.Object(
  {
    status: Type.Optional(DeliveryStatusName),
    endpoint_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    limit: Type.Optional(Limit(100, 20)),
  },
  { additionalProperties: false },
);

const ReplayInput = Type.Object(
  { delivery_id: Type.String({ minLength: 1, maxLength: 64, description: 'The delivery id, dlv_...' }) },
  { additionalProperties: false },
);

const readOnly = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

async function findShipment(ctx: AppContext, access: TenantAccess, args: Static<typeof GetInput>) {
  if (args.id) return getShipment(ctx, access, args.id);
  if (!args.tracking_number) {
    throw new AppError('validation.failed', 'Give the shipment id or its tracking number', {
      errors: [{ path: '/id', message: 'id or tracking_number is required' }],
    });
  }
  const row = await ctx.db
    .selectFrom('shipments')
    .selectAll()
    .where('tracking_number', '=', args.tracking_number)
    .where('tenant_id', '=', access.tenantId)
    .where('livemode', '=', access.livemode)
    .executeTakeFirst();
  if (!row || !canSee(access, row)) throw new AppError('shipment.not_found');
  return presentTrackedShipment(row);
}

export const TOOLS: readonly Tool[] = [
  {
    name: 'search_shipments',
    title: 'Search shipments',
    description:
      'Find shipments, newest first, by status, by tracking number or external reference, or by the start of the recipient name. Answers a page like GET /v1/shipments, each shipment with its newest 20 checkpoints.',
    scope: 'shipments:read',
    input: SearchInput,
    annotations: readOnly,
    async run(ctx, access, args: Static<typeof SearchInput>) {
      const page = await listShipments(ctx, access, {
        ...(args.status ? { status: args.status } : {}),
        ...(args.query ? { query: args.query } : {}),
        ...(args.customer_account_id ? { customer_account_id: args.customer_account_id } : {}),
        ...(args.updated_after ? { updated_after: new Date(args.updated_after) } : {}),
        limit: args.limit ?? 20,
        ...(args.cursor ? { cursor: args.cursor } : {}),
      });
      const lines = page.data.map((s) => `${s.id} ${s.tracking_number} ${s.status} (${s.recipient_name})`);
      const timelines = await recentCheckpoints(
        ctx,
        access.tenantId,
        page.data.map((s) => s.id),
        TIMELINE,
      );
      const data = page.data.map((s) => ({ ...s, checkpoints: timelines.get(s.id) ?? [] }));
      return {
        result: { ...page, data } as unknown as Record<string, unknown>,
        text: `${page.data.length} shipment(s)${page.next_cursor ? ', more with the cursor' : ''}${lines.length ? `:\n${lines.join('\n')}` : ''}`,
      };
    },
  } as Tool<typeof SearchInput>,
  {
    name: 'get_shipment',
    title: 'Get a shipment',
    description:
      'One shipment by id or tracking number, as GET /v1/shipments/{id} answers it, with its newest 20 checkpoints and its events (newest first).',
    scope: 'shipments:read',
    input: GetInput,
    annotations: readOnly,
    async run(ctx, access, args: Static<typeof GetInput>) {
      const shipment = await findShipment(ctx, access, args);
      const events = await listEvents(ctx, access, { shipment_id: shipment.id, limit: 50 });
      const timelines = await recentCheckpoints(ctx, access.tenantId, [shipment.id], TIMELINE);
      return {
        result: {
          ...shipment,
          checkpoints: timelines.get(shipment.id) ?? [],
          events: events.data.map((e) => ({ id: e.id, type: e.type, created_at: e.created_at })),
        },
        text: `${shipment.id} ${shipment.tracking_number}: ${shipment.status}, to ${shipment.recipient_name}, updated ${shipment.updated_at}`,
      };
    },
  } as Tool<typeof GetInput>,
  {
    name: 'update_shipment_status',
    title: 'Move a shipment to another status',
    description: `Move a shipment as POST /v1/shipments/{id}/status does. Statuses: ${SHIPMENT_STATUSES.join(', ')}; moves not allowed answer shipment.invalid_transition.`,
    scope: 'shipments:write',
    input: UpdateInput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async run(ctx, access, args: Static<typeof UpdateInput>) {
      const shipment = await moveShipment(ctx, access, args.id, {
        status: args.status,
        ...(args.exception_reason ? { exception_reason: args.exception_reason } : {}),
      });
      return { result: shipment, text: `${shipment.id} is now ${shipment.status}` };
    },
  } as Tool<typeof UpdateInput>,
  {
    name: 'add_checkpoint',
    title: "Add a checkpoint to a shipment's timeline",
    description:
      'Add a checkpoint as POST /v1/shipments/{id}/checkpoints does: its status moves the shipment only forward (through skipped statuses); an older or backward one is kept with applied false; the same external_id again changes nothing. Sub-statuses: GET /v1/shipment-sub-statuses.',
    scope: 'shipments:write',
    input: AddCheckpointInput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async run(ctx, access, args: Static<typeof AddCheckpointInput>) {
      const { id, ...input } = args;
      const { checkpoint, shipment, applied, created } = await applyCheckpoint(ctx, {
        ...targetOf(access, id),
        input,
        source: 'api',
      });
      const what = created ? (applied ? 'applied' : 'kept, not applied') : 'already there (same external_id)';
      return {
        result: { checkpoint, shipment, applied },
        text: `${checkpoint.id} on ${shipment.id}: ${what}; the shipment is ${shipment.status}`,
      };
    },
  } as Tool<typeof AddCheckpointInput>,
  {
    name: 'list_webhook_deliveries',
    title: 'List webhook deliveries',
    description:
      'Webhook deliveries, newest first, of one endpoint or of every endpoint; failed ones unless another status is asked for.',
    scope: 'webhooks:read',
    input: ListDeliveriesInput,
    annotations: readOnly,
    async run(ctx, access, args: Static<typeof ListDeliveriesInput>) {
      const page = await listDeliveries(ctx, access, args.endpoint_id ?? null, {
        status: args.status ?? 'failed',
        limit: args.limit ?? 20,
      });
      const lines = page.data.map((d) => `${d.id} ${d.event_type} ${d.status} (endpoint ${d.endpoint_id})`);
      return {
        result: page as unknown as Record<string, unknown>,
        text: `${page.data.length} ${args.status ?? 'failed'} deliveries${lines.length ? `:\n${lines.join('\n')}` : ''}`,
      };
    },
  } as Tool<typeof ListDeliveriesInput>,
  {
    name: 'replay_webhook_delivery',
    title: 'Replay a webhook delivery',
    description:
      'Send one delivery again now, with the same webhook-id (the receiver dedupes by it), as POST /v1/webhook-deliveries/{id}/replay.',
    scope: 'webhooks:write',
    input: ReplayInput,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    async run(ctx, access, args: Static<typeof ReplayInput>) {
      const attempt = await replayDelivery(ctx, access, args.delivery_id);
      return {
        result: attempt as unknown as Record<string, unknown>,
        text: `Replayed ${args.delivery_id}: ${attempt.status_code ?? attempt.error ?? 'no answer'}; the delivery is ${attempt.delivery_status}`,
      };
    },
  } as Tool<typeof ReplayInput>,
];

export const TOOLS_BY_NAME: ReadonlyMap<string, Tool> = new Map(TOOLS.map((tool) => [tool.name, tool]));

// Arguments are JSON already: a string where a number belongs is an error, never coerced.
const ajv = new Ajv({
  removeAdditional: false,
  useDefaults: false,
  coerceTypes: false,
  allErrors: true,
  strict: false,
});
addFormats(ajv);
const validators = new Map<string, ValidateFunction>(
  TOOLS.map((tool) => [tool.name, ajv.compile(tool.input)]),
);

/** The arguments' problems as the API's validation.failed lists them (`errors: [{path, message}]`). */
export function argumentErrors(tool: Tool, args: unknown): { path: string; message: string }[] {
  const validate = validators.get(tool.name) as ValidateFunction;
  if (validate(args ?? {})) return [];
  return schemaFieldErrors(validate.errors ?? []);
}
