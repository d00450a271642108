/**
 * JSON with object keys sorted (by UTF-16 code units, as RFC 8785 sorts them) at every level, so
 * that two bodies that differ only in key order give the same text. Arrays keep their order.
 * Iterative, with its own stack: a body nested thousands of levels deep costs memory in proportion
 * to its size, never the call stack. Values that JSON cannot carry (undefined, functions) are left
 * out of objects and written as null in arrays, as JSON.stringify does.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Each entry is either a value still to write or a piece of punctuation already decided.
  const stack: Array<{ value: unknown } | { text: string }> = [{ value }];
  while (stack.length > 0) {
    const next = stack.pop() as { value: unknown } | { text: string };
    if ('text' in next) {
      out.push(next.text);
      continue;
    }
    const current = toJsonValue(next.value);
    if (current === null || typeof current !== 'object') {
      out.push(scalar(current));
      continue;
    }
    if (Array.isArray(current)) {
      // Pushed in reverse so that they pop in order.
      stack.push({ text: ']' });
      for (let i = current.length - 1; i >= 0; i -= 1) {
        stack.push({ value: current[i] });
        if (i > 0) stack.push({ text: ',' });
      }
      stack.push({ text: '[' });
      continue;
    }
    const record = current as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => isJsonValue(toJsonValue(record[key])))
      .sort(compareCodeUnits);
    stack.push({ text: '}' });
    for (let i = keys.length - 1; i >= 0; i -= 1) {
      const key = keys[i] as string;
      stack.push({ value: record[key] });
      stack.push({ text: `${JSON.stringify(key)}:` });
      if (i > 0) stack.push({ text: ',' });
    }
    stack.push({ text: '{' });
  }
  return out.join('');
}

/** What JSON.stringify would write for the value: its toJSON (Dates, Buffers) first. */
function toJsonValue(value: unknown): unknown {
  if (
    value !== null &&
    typeof value === 'object' &&
    typeof (value as { toJSON?: unknown }).toJSON === 'function'
  ) {
    return (value as { toJSON: () => unknown }).toJSON();
  }
  return value;
}

function isJsonValue(value: unknown): boolean {
  return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
}

function scalar(value: unknown): string {
  if (typeof value === 'bigint') return value.toString();
  if (!isJsonValue(value)) return 'null';
  return JSON.stringify(value) ?? 'null';
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
