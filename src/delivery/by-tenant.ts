/**
 * Items grouped by their company, in the order first seen: on Citus each group's statement runs in
 * that company's shard (decision 0074).
 */
export function byTenant<T>(
  items: readonly T[],
  tenantOf: (item: T) => string,
): Array<{ tenant: string; items: T[] }> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const tenant = tenantOf(item);
    const group = groups.get(tenant);
    if (group) group.push(item);
    else groups.set(tenant, [item]);
  }
  return [...groups].map(([tenant, grouped]) => ({ tenant, items: grouped }));
}
