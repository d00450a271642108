/**
 * Roles, scopes and what each role may do: the one place these rules live (CONTRACT.md, People).
 */
export const SCOPES = ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'] as const;
export type Scope = (typeof SCOPES)[number];

export const COMPANY_ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export const MERCHANT_ROLES = ['merchant_admin', 'merchant_member'] as const;
export const ROLES = [...COMPANY_ROLES, ...MERCHANT_ROLES] as const;
export type Role = (typeof ROLES)[number];

const ROLE_SCOPES: Record<Role, readonly Scope[]> = {
  owner: SCOPES,
  admin: SCOPES,
  member: ['shipments:read', 'shipments:write'],
  viewer: ['shipments:read'],
  merchant_admin: ['shipments:read', 'shipments:write', 'webhooks:read', 'webhooks:write'],
  merchant_member: ['shipments:read', 'shipments:write'],
};

/** Plain words for each scope, shown on the consent page and the token form. */
export const SCOPE_DESCRIPTIONS: Record<Scope, string> = {
  'shipments:read': 'See your shipments and their status',
  'shipments:write': 'Create shipments and change their status',
  'webhooks:read': 'See your webhook endpoints and their deliveries',
  'webhooks:write': 'Create and manage webhook endpoints that receive your shipment events',
};

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

export function isRole(value: string): value is Role {
  return (ROLES as readonly string[]).includes(value);
}

export function isMerchantRole(role: Role): boolean {
  return role === 'merchant_admin' || role === 'merchant_member';
}

export function scopesOfRole(role: string): ReadonlySet<Scope> {
  return new Set(isRole(role) ? ROLE_SCOPES[role] : []);
}

/** A write scope includes reading what it writes. */
export function allows(granted: ReadonlySet<Scope>, needed: Scope): boolean {
  if (granted.has(needed)) return true;
  if (needed === 'shipments:read') return granted.has('shipments:write');
  if (needed === 'webhooks:read') return granted.has('webhooks:write');
  return false;
}

/** Owners, admins and merchant admins manage integrations: install apps, tokens, endpoints. */
export function managesIntegrations(role: string): boolean {
  return role === 'owner' || role === 'admin' || role === 'merchant_admin';
}

export function managesMembers(role: string): boolean {
  return role === 'owner' || role === 'admin';
}

export function intersectScopes(a: Iterable<string>, b: ReadonlySet<Scope>): Scope[] {
  return SCOPES.filter((scope) => b.has(scope) && [...a].includes(scope));
}
