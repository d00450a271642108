/** The outbound budget's table (budget.ts), apart from its rules: db/schema.ts composes it. */

export interface OutboundBudgetTable {
  /** `account:<kind>:<id>`, `address:<address key>`, or `host:<name>` for a name that did not resolve. */
  subject: string;
  window_start: Date;
  sends: number;
}

export interface OutboundTables {
  outbound_budget: OutboundBudgetTable;
}
