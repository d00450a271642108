import { AppError, type FieldError, validationError } from '../../lib/errors.ts';
import type { ApiVersion } from '../shipments/events.ts';
import { eventDefinition, schemaOf } from './event-types.ts';

/**
 * Filters (CONTRACT.md "Apps as code"): which events of the subscribed types a target receives.
 * An object whose keys are dotted paths into the envelope and whose values are conditions; every
 * key must hold; `any` holds when one of its filters does, `not` when its filter does not.
 *
 * A filter is checked against the event catalogue's schemas when it is saved, and compiled to one
 * SQL/JSON path predicate with its values passed apart as variables (never spliced into the text),
 * which the fan-out evaluates with `jsonb_path_match(envelope, path, vars, silent => true)`: an
 * event the filter leaves out makes no delivery row, and nothing in an event can make it throw.
 */
export type Filter = Record<string, unknown>;

export const MAX_FILTER_CONDITIONS = 20;
/** `any` and `not` inside one another, at most this deep. */
export const MAX_FILTER_DEPTH = 4;

const OPERATORS = ['eq', 'ne', 'in', 'nin', 'exists', 'gt', 'gte', 'lt', 'lte', 'prefix'] as const;
type Operator = (typeof OPERATORS)[number];
const PATH = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** What a path may hold, read from the schemas: JSON types, with `timestamp` for date-time strings. */
type Kind = 'string' | 'timestamp' | 'number' | 'boolean' | 'null' | 'object' | 'array';

export interface CompiledFilter {
  /** A SQL/JSON path predicate (the `jsonpath` type), e.g. `$."data"."shipment"."status" == $v0`. */
  path: string;
  /** The values the predicate names: `{v0: "delivered"}`. */
  vars: Record<string, unknown>;
}

type Json = Record<string, unknown>;

function resolveRef(root: Json, node: Json): Json {
  const ref = node.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/$defs/')) return node;
  const defs = root.$defs as Record<string, Json> | undefined;
  return resolveRef(root, defs?.[ref.slice('#/$defs/'.length)] ?? {});
}

/** The schemas a path leads to in one type's schema (several through anyOf), or none. */
function schemasAt(root: Json, node: Json, segments: readonly string[]): Json[] {
  const schema = resolveRef(root, node);
  const alternatives = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (alternatives) return alternatives.flatMap((alt) => schemasAt(root, alt, segments));
  if (segments.length === 0) return [schema];
  // Lax mode reads through arrays: `data.parcels.weight_grams` is each parcel's weight.
  if (schema.type === 'array' && schema.items) return schemasAt(root, schema.items as Json, segments);
  const properties = schema.properties as Record<string, Json> | undefined;
  const [head, ...rest] = segments;
  const next = head !== undefined ? properties?.[head] : undefined;
  return next ? schemasAt(root, next, rest) : [];
}

function kindsOf(root: Json, schema: Json): Kind[] {
  const resolved = resolveRef(root, schema);
  const alternatives = (resolved.anyOf ?? resolved.oneOf) as Json[] | undefined;
  if (alternatives) return alternatives.flatMap((alt) => kindsOf(root, alt));
  if ('const' in resolved) return [kindOfValue(resolved.const)].filter((k): k is Kind => k !== null);
  const type = resolved.type;
  const types = Array.isArray(type) ? type : [type];
  return types.flatMap((t): Kind[] => {
    if (t === 'string') return [resolved.format === 'date-time' ? 'timestamp' : 'string'];
    if (t === 'integer' || t === 'number') return ['number'];
    if (t === 'boolean' || t === 'null' || t === 'object' || t === 'array') return [t];
    return [];
  });
}

function kindOfValue(value: unknown): Kind | null {
  if (value === null) return 'null';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number' && Number.isFinite(value)) return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return null;
}

/** Where a path may lead across the given types' schemas in a version; empty when none of them has it. */
function kindsAtPath(types: readonly string[], version: ApiVersion, path: string): Set<Kind> {
  const kinds = new Set<Kind>();
  for (const type of types) {
    const definition = eventDefinition(type);
    if (!definition) continue;
    const root = schemaOf(definition, version);
    for (const schema of schemasAt(root, root, path.split('.'))) {
      for (const kind of kindsOf(root, schema)) kinds.add(kind);
    }
  }
  return kinds;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function isTimestamp(value: unknown): value is string {
  return typeof value === 'string' && TIMESTAMP.test(value) && !Number.isNaN(Date.parse(value));
}

/** Compiles and checks at once: one walk gives both the predicate and every problem with its path. */
class FilterCompiler {
  readonly errors: FieldError[] = [];
  readonly unknownPaths: FieldError[] = [];
  readonly vars: Record<string, unknown> = {};
  conditions = 0;

  private readonly types: readonly string[];
  private readonly version: ApiVersion;

  constructor(types: readonly string[], version: ApiVersion) {
    this.types = types;
    this.version = version;
  }

  private variable(value: unknown): string {
    const name = `v${Object.keys(this.vars).length}`;
    this.vars[name] = value;
    return `$${name}`;
  }

  filter(value: unknown, at: string, depth: number): string {
    if (depth > MAX_FILTER_DEPTH) {
      this.errors.push({ path: at, message: `nests any/not more than ${MAX_FILTER_DEPTH} deep` });
      return 'true';
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.errors.push({ path: at, message: 'must be an object of paths and conditions' });
      return 'true';
    }
    if (depth > 0 && Object.keys(value).length === 0) {
      this.errors.push({ path: at, message: 'must hold at least one condition' });
      return 'true';
    }
    const parts: string[] = [];
    for (const [key, condition] of Object.entries(value)) {
      const where = `${at}/${key}`;
      if (key === 'any') parts.push(this.any(condition, where, depth));
      else if (key === 'not') parts.push(negate(this.filter(condition, where, depth + 1)));
      else parts.push(this.pathCondition(key, condition, where));
    }
    return parts.length === 0 ? 'true' : parts.map((p) => `(${p})`).join(' && ');
  }

  private any(value: unknown, at: string, depth: number): string {
    if (!Array.isArray(value) || value.length === 0) {
      this.errors.push({ path: at, message: 'must be a non-empty array of filters' });
      return 'true';
    }
    return value.map((item, index) => `(${this.filter(item, `${at}/${index}`, depth + 1)})`).join(' || ');
  }

  private pathCondition(path: string, condition: unknown, at: string): string {
    if (!PATH.test(path)) {
      this.errors.push({ path: at, message: 'must be a dotted path such as data.shipment.status' });
      return 'true';
    }
    const kinds = kindsAtPath(this.types, this.version, path);
    if (kinds.size === 0) {
      this.unknownPaths.push({
        path: at,
        message: `${path} is not in the schema of ${this.types.join(', ')} in api_version ${this.version}`,
      });
      return 'true';
    }
    if (condition === null || typeof condition !== 'object' || Array.isArray(condition)) {
      this.errors.push({ path: at, message: `must be a condition: one of ${OPERATORS.join(', ')}` });
      return 'true';
    }
    const entries = Object.entries(condition);
    if (entries.length !== 1) {
      this.errors.push({ path: at, message: 'must hold exactly one operator' });
      return 'true';
    }
    const [[operator, operand]] = entries as [[string, unknown]];
    this.conditions += 1;
    const where = `${at}/${operator}`;
    const target = `$${path
      .split('.')
      .map((segment) => `."${segment}"`)
      .join('')}`;
    if (!(OPERATORS as readonly string[]).includes(operator)) {
      this.errors.push({ path: where, message: `is not an operator: use one of ${OPERATORS.join(', ')}` });
      return 'true';
    }
    return this.operation(operator as Operator, operand, target, kinds, path, where);
  }

  private scalar(value: unknown, kinds: Set<Kind>, path: string, at: string): boolean {
    const kind = kindOfValue(value);
    const fits =
      kind !== null &&
      (kinds.has(kind) || (kind === 'string' && kinds.has('timestamp') && isTimestamp(value)));
    if (!fits) {
      this.errors.push({ path: at, message: `must be ${describe(kinds)}: ${path} holds that` });
    }
    return fits;
  }

  private operation(
    operator: Operator,
    operand: unknown,
    target: string,
    kinds: Set<Kind>,
    path: string,
    at: string,
  ): string {
    switch (operator) {
      case 'eq':
      case 'ne': {
        if (!this.scalar(operand, kinds, path, at)) return 'true';
        const test = `${target} == ${this.variable(normalise(operand, kinds))}`;
        return operator === 'eq' ? test : negate(test);
      }
      case 'in':
      case 'nin': {
        if (!Array.isArray(operand) || operand.length === 0 || operand.length > 100) {
          this.errors.push({ path: at, message: 'must be an array of 1 to 100 values' });
          return 'true';
        }
        const ok = operand.every((item, index) => this.scalar(item, kinds, path, `${at}/${index}`));
        if (!ok) return 'true';
        const values = operand.map((item) => normalise(item, kinds));
        const test = `${target} == ${this.variable(values)}[*]`;
        return operator === 'in' ? test : negate(test);
      }
      case 'exists':
        if (typeof operand !== 'boolean') {
          this.errors.push({ path: at, message: 'must be true or false' });
          return 'true';
        }
        return operand ? `exists(${target})` : `!exists(${target})`;
      case 'prefix':
        if (!kinds.has('string') && !kinds.has('timestamp')) {
          this.errors.push({ path: at, message: `applies to text: ${path} holds ${describe(kinds)}` });
          return 'true';
        }
        if (typeof operand !== 'string' || operand === '') {
          this.errors.push({ path: at, message: 'must be a non-empty string' });
          return 'true';
        }
        return `${target} starts with ${this.variable(operand)}`;
      default: {
        const symbol = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[operator];
        if (kinds.has('number') && typeof operand === 'number' && Number.isFinite(operand)) {
          return `${target} ${symbol} ${this.variable(operand)}`;
        }
        if (kinds.has('timestamp') && isTimestamp(operand)) {
          // Envelope timestamps are ISO 8601 in UTC with milliseconds: written the same way,
          // their text order is their time order.
          return `${target} ${symbol} ${this.variable(new Date(operand).toISOString())}`;
        }
        const wanted = kinds.has('number')
          ? 'a number'
          : kinds.has('timestamp')
            ? 'an ISO 8601 timestamp'
            : null;
        this.errors.push({
          path: at,
          message: wanted
            ? `must be ${wanted}: ${path} holds that`
            : `compares numbers and timestamps: ${path} holds ${describe(kinds)}`,
        });
        return 'true';
      }
    }
  }
}

/**
 * "Does not hold": a comparison SQL/JSON cannot decide (a null where text was expected) is
 * unknown, and `!unknown` is unknown too; here it counts as not holding, so `not` and `ne` let it
 * through.
 */
function negate(predicate: string): string {
  return `!(${predicate}) || ((${predicate}) is unknown)`;
}

function normalise(value: unknown, kinds: Set<Kind>): unknown {
  // A timestamp compared for equality is compared as the envelope writes it.
  if (typeof value === 'string' && !kinds.has('string') && kinds.has('timestamp') && isTimestamp(value)) {
    return new Date(value).toISOString();
  }
  return value;
}

function describe(kinds: Set<Kind>): string {
  const names: Record<Kind, string> = {
    string: 'a string',
    timestamp: 'an ISO 8601 timestamp',
    number: 'a number',
    boolean: 'true or false',
    null: 'null',
    object: 'an object',
    array: 'an array',
  };
  return [...kinds].map((kind) => names[kind]).join(' or ');
}

/**
 * Checks a filter for the given event types and compiles it; `at` is where the filter sits in the
 * request (`/filter`, `/manifest/subscriptions/0/filter`). The paths are those of the target's
 * version, whose envelope the fan-out evaluates it on (migration 0097). An empty or absent filter
 * is none (null).
 * Refuses with 422 `filter.unknown_path` naming each unknown path, else 422 `validation.failed`
 * with each problem's path: nothing is stored.
 */
export function compileFilter(
  filter: unknown,
  types: readonly string[],
  at: string,
  version: ApiVersion,
): CompiledFilter | null {
  const errors = filterProblems(filter, types, at, version);
  if (errors.unknownPaths.length > 0) {
    throw new AppError(
      'filter.unknown_path',
      `The filter names paths the event types do not have: ${errors.unknownPaths.map((e) => e.path).join(', ')}`,
      { errors: errors.unknownPaths },
    );
  }
  if (errors.errors.length > 0) throw validationError(errors.errors, 'The filter is not valid', 422);
  return errors.compiled;
}

/** The problems of a filter without throwing (a manifest gathers every subscription's). */
export function filterProblems(
  filter: unknown,
  types: readonly string[],
  at: string,
  version: ApiVersion,
): { compiled: CompiledFilter | null; errors: FieldError[]; unknownPaths: FieldError[] } {
  if (filter === undefined || filter === null) return { compiled: null, errors: [], unknownPaths: [] };
  const compiler = new FilterCompiler(types, version);
  const path = compiler.filter(filter, at, 0);
  if (compiler.conditions > MAX_FILTER_CONDITIONS) {
    compiler.errors.push({
      path: at,
      message: `has ${compiler.conditions} conditions: at most ${MAX_FILTER_CONDITIONS}`,
    });
  }
  const empty = typeof filter === 'object' && !Array.isArray(filter) && Object.keys(filter).length === 0;
  return {
    compiled: empty ? null : { path, vars: compiler.vars },
    errors: compiler.errors,
    unknownPaths: compiler.unknownPaths,
  };
}
