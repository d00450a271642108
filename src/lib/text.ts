/**
 * What text the service takes in. PostgreSQL refuses U+0000 in text and lone UTF-16 surrogates in
 * jsonb, a control character in a header value crashes Node's response, and none of them is
 * anything a person types; so they are refused where input enters (src/http/input.ts), once per
 * kind of input, before a route sees it.
 *
 * - `line`: URL paths and queries, header-borne values (Basic credentials): no C0 control at all,
 *   no DEL.
 * - `text`: JSON and form bodies: the same, except tab, line feed and carriage return, which
 *   descriptions and text areas legitimately hold.
 */
export type TextKind = 'line' | 'text';

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const LINE_CONTROLS = /[\u0000-\u001f\u007f]/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const TEXT_CONTROLS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Why a string cannot be taken, or null when it can. */
export function textFault(value: string, kind: TextKind): string | null {
  if ((kind === 'line' ? LINE_CONTROLS : TEXT_CONTROLS).test(value)) {
    return 'must not contain control characters';
  }
  if (!value.isWellFormed()) return 'must not contain unpaired UTF-16 surrogates';
  return null;
}

/** The deepest JSON body taken: far beyond any schema here, far below any recursion limit. */
export const MAX_JSON_DEPTH = 32;

export type JsonFault =
  | { kind: 'too_deep'; path: string }
  | { kind: 'text'; path: string; message: string }
  | null;

interface Node {
  value: unknown;
  key: string | number | null;
  parent: Node | null;
  depth: number;
}

/** The JSON pointer (RFC 6901) of a node, built only when something is wrong there. */
function pointer(node: Node, lastKey?: string): string {
  const parts: string[] = lastKey === undefined ? [] : [lastKey];
  for (let at: Node | null = node; at && at.key !== null; at = at.parent) parts.unshift(String(at.key));
  if (parts.length === 0) return '/';
  return parts.map((part) => `/${part.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

/**
 * The first thing wrong with a parsed JSON value: nesting deeper than MAX_JSON_DEPTH, or a key or
 * string that `textFault` refuses. Walks with its own stack, so a deep value cannot overflow it.
 */
export function jsonFault(root: unknown): JsonFault {
  const stack: Node[] = [{ value: root, key: null, parent: null, depth: 0 }];
  while (stack.length > 0) {
    const node = stack.pop() as Node;
    const { value } = node;
    if (typeof value === 'string') {
      const message = textFault(value, 'text');
      if (message) return { kind: 'text', path: pointer(node), message };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (node.depth >= MAX_JSON_DEPTH) return { kind: 'too_deep', path: pointer(node) };
    const depth = node.depth + 1;
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], key: i, parent: node, depth });
      continue;
    }
    const entries = Object.entries(value);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string, unknown];
      const message = textFault(key, 'text');
      if (message) return { kind: 'text', path: pointer(node, key), message: `name ${message}` };
      stack.push({ value: child, key, parent: node, depth });
    }
  }
  return null;
}
