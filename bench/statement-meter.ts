/**
 * Counts the statements this process sends to PostgreSQL (every pg.Client's query), by shape (the
 * first words of the SQL), and the time each shape took: the profile of a benchmark's step, with
 * no server setting (pg_stat_statements is not loaded on every server).
 */
import pg from 'pg';

export interface StatementShape {
  shape: string;
  count: number;
  ms: number;
}

export class StatementMeter {
  #on = false;
  readonly #shapes = new Map<string, StatementShape>();

  constructor() {
    const meter = this;
    const original = pg.Client.prototype.query as (...args: unknown[]) => unknown;
    // biome-ignore lint/suspicious/noExplicitAny: wraps pg's overloaded query
    (pg.Client.prototype as any).query = function query(this: pg.Client, ...args: unknown[]) {
      const config = args[0] as string | { text?: string };
      const text = typeof config === 'string' ? config : (config?.text ?? '');
      const result = original.apply(this, args);
      if (!meter.#on || !(result instanceof Promise)) return result;
      const started = performance.now();
      const count = () => meter.#count(text, performance.now() - started);
      result.then(count, count);
      return result;
    };
  }

  #count(text: string, ms: number): void {
    const shape = shapeOf(text);
    const entry = this.#shapes.get(shape) ?? { shape, count: 0, ms: 0 };
    entry.count += 1;
    entry.ms += ms;
    this.#shapes.set(shape, entry);
  }

  start(): void {
    this.#shapes.clear();
    this.#on = true;
  }

  /** The shapes counted since start, most frequent first. */
  stop(): StatementShape[] {
    this.#on = false;
    return [...this.#shapes.values()].sort((a, b) => b.count - a.count);
  }
}

/** The first words of a statement, its table named: `insert into "shipment_checkpoints"`. */
function shapeOf(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim().toLowerCase();
  const table = /(?:from|into|update|select) "?([a-z_][a-z0-9_]*)"?/.exec(flat.slice(0, 200));
  const verb = flat.split(' ')[0] ?? '';
  return verb === 'select' && /^select (webhook_fan_out|pg_notify)/.test(flat)
    ? (/^select ([a-z_]+)/.exec(flat)?.[1] ?? verb)
    : `${verb} ${table?.[1] ?? ''}`.trim();
}
