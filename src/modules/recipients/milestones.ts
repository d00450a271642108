/** The milestones a company may mail its recipients about (CONTRACT.md "Recipients"). */
export const MILESTONES = ['picked_up', 'out_for_delivery', 'delivered', 'exception', 'delayed'] as const;
export type Milestone = (typeof MILESTONES)[number];

/** The milestone a status event reaches, if any (status_changed carries the status moved to). */
export function milestoneOfStatus(status: string): Milestone | null {
  return (MILESTONES as readonly string[]).includes(status) && status !== 'delayed'
    ? (status as Milestone)
    : null;
}
