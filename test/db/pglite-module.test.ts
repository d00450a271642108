import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { exportedFunctionIndex } from '../../src/db/pglite-module.ts';

/** A module importing one function and exporting a memory, then two functions: `f` is function 2. */
const SMALL_MODULE = Uint8Array.from([
  ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00], // magic, version 1
  ...[0x01, 0x04, 0x01, 0x60, 0x00, 0x00], // types: () -> ()
  ...[0x02, 0x07, 0x01, 0x01, 0x6d, 0x01, 0x69, 0x00, 0x00], // imports: "m" "i", function of type 0
  ...[0x03, 0x03, 0x02, 0x00, 0x00], // functions: two of type 0
  ...[0x05, 0x03, 0x01, 0x00, 0x01], // memory: one page
  ...[0x07, 0x0f, 0x03], // exports: three
  ...[0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00], // "mem", memory 0
  ...[0x01, 0x67, 0x00, 0x01], // "g", function 1
  ...[0x01, 0x66, 0x00, 0x02], // "f", function 2
  ...[0x0a, 0x07, 0x02, 0x02, 0x00, 0x0b, 0x02, 0x00, 0x0b], // code: two empty bodies
]);

describe("PGlite's WebAssembly module", () => {
  it('finds an exported function by name, counting the imported functions before it', () => {
    expect(exportedFunctionIndex(SMALL_MODULE, 'f')).toBe(2);
    expect(exportedFunctionIndex(SMALL_MODULE, 'g')).toBe(1);
    // Not a function, or not there.
    expect(exportedFunctionIndex(SMALL_MODULE, 'mem')).toBeNull();
    expect(exportedFunctionIndex(SMALL_MODULE, 'ff')).toBeNull();
  });

  it("exports PostgreSQL's parser, whose optimised code is made with the module (pglite-module.ts)", () => {
    // A PGlite build without the export starts as before, with the parser's compile at its peak.
    const file = fileURLToPath(new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite')));
    expect(exportedFunctionIndex(readFileSync(file), 'raw_parser')).toBeGreaterThan(0);
  });
});
