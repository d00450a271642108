import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ENGINE = path.resolve('src/delivery');
const MODULES = path.resolve('src/modules');

/** Every relative import of a file, resolved to an absolute path. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from\s+|import\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g)];
  return specifiers.map((match) => path.resolve(path.dirname(file), match[1] as string));
}

describe('the delivery engine', () => {
  it('imports nothing from the capabilities that use it', () => {
    const files = readdirSync(ENGINE).filter((name) => name.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(10);
    const crossings = files.flatMap((name) =>
      importsOf(path.join(ENGINE, name))
        .filter((target) => target.startsWith(`${MODULES}${path.sep}`))
        .map((target) => `${name} -> ${path.relative(process.cwd(), target)}`),
    );
    expect(crossings).toEqual([]);
  });
});
