import { Type } from 'typebox';
import { Id, Nullable, Timestamp } from '../../http/schemas.ts';
import { ROLES, SCOPES } from './roles.ts';

export const Email = Type.String({ format: 'email', maxLength: 254 });
export const ScopeName = Type.Union(SCOPES.map((s) => Type.Literal(s)));
export const RoleName = Type.Union(ROLES.map((r) => Type.Literal(r)));
export const TenantParams = Type.Object({ tenant_id: Id(64) }, { additionalProperties: false });

export const PersonSchema = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    name: Type.String(),
    email_verified: Type.Boolean(),
    is_reviewer: Type.Boolean(),
    created_at: Timestamp,
  },
  { $id: 'Person' },
);

export const MembershipSummarySchema = Type.Object({
  tenant_id: Type.String(),
  company_name: Type.String(),
  company_live: Type.Boolean(),
  role: Type.String(),
  customer_account_id: Nullable(Type.String()),
  customer_account_name: Nullable(Type.String()),
  manages_integrations: Type.Boolean(),
});

export const CompanySchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    live: Type.Boolean(),
    agent_access: Type.Object(
      { test: Type.Boolean(), live: Type.Boolean() },
      { description: 'Which modes AI agents may use through /mcp (owners and admins change it with PATCH)' },
    ),
    stall_after_hours: Type.Integer({
      minimum: 1,
      maximum: 720,
      description:
        'Hours a shipment not final may go without a checkpoint or move before shipment.stalled (default 72; PATCH)',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Company' },
);

export const CustomerAccountSchema = Type.Object(
  { id: Type.String(), tenant_id: Type.String(), name: Type.String(), created_at: Timestamp },
  { $id: 'CustomerAccount' },
);

export const MembershipSchema = Type.Object(
  {
    id: Type.String(),
    tenant_id: Type.String(),
    user_id: Type.String(),
    email: Type.String(),
    name: Type.String(),
    role: Type.String(),
    customer_account_id: Nullable(Type.String()),
    created_at: Timestamp,
  },
  { $id: 'Membership' },
);

export const ApiTokenSchema = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    mode: Type.Union([Type.Literal('live'), Type.Literal('test')]),
    audience: Type.Union([Type.Literal('v1'), Type.Literal('mcp')], {
      description: '`v1`: works at the API; `mcp`: works only at the MCP server (a headless agent)',
    }),
    scopes: Type.Array(Type.String()),
    customer_account_id: Nullable(Type.String()),
    token_hint: Type.String(),
    created_at: Timestamp,
    last_used_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
    token: Type.Optional(Type.String({ description: 'The secret, shown once at creation' })),
  },
  { $id: 'ApiToken' },
);
