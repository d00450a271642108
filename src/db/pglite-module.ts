import { readFile } from 'node:fs/promises';
import { setFlagsFromString } from 'node:v8';
import type { PGliteOptions } from '@electric-sql/pglite';

type WasmModule = NonNullable<PGliteOptions['pgliteWasmModule']>;
/** Node's WebAssembly global (the project's TypeScript libraries do not declare it). */
const { WebAssembly: wasm } = globalThis as unknown as {
  WebAssembly: { compile(bytes: Uint8Array): Promise<WasmModule> };
};

/**
 * PostgreSQL's parser, `raw_parser` in PGlite's WebAssembly (105 KB: Bison's action switch, a
 * `br_table` of 2,486 cases in blocks nested 2,055 deep), costs V8 13's optimising compiler
 * (Node 24) about 600 MB while it compiles it; V8 14 (Node 26) takes 27 MB. It is the process's
 * peak (issue 25 item 5). It tiers up in the first queries whatever the settings (Liftoff's budget
 * counts the bytes a loop runs, and its loop is the whole switch), so only the moment is ours to
 * choose: compiled with the module, before PostgreSQL's memory, its start-up's other hot functions
 * and their compiles are there, a start peaks at 635 to 647 MB instead of 733 to 850. The start
 * waits for it instead of running beside it (a restart listens about 0.2 s later). Decision 0002.
 */
const PARSER_EXPORT = 'raw_parser';
/** V8 14 compiles the parser in little memory: nothing to move there. */
const COMPILER_NEEDS_IT = Number(process.versions.v8.split('.')[0]) < 14;

let compiled: Promise<WasmModule | null> | null = null;

/**
 * PGlite's WebAssembly module, compiled once per process with the parser's optimised code made
 * first; null where that is not needed (V8 14) or not possible (no such export), and PGlite
 * compiles its module itself as it always did.
 */
export function pgliteModule(): Promise<WasmModule | null> {
  compiled ??= COMPILER_NEEDS_IT ? compileParserFirst() : Promise.resolve(null);
  return compiled;
}

async function compileParserFirst(): Promise<WasmModule | null> {
  const file = new URL('./pglite.wasm', import.meta.resolve('@electric-sql/pglite'));
  const bytes = await readFile(file);
  const parser = exportedFunctionIndex(bytes, PARSER_EXPORT);
  if (parser === null) return null;
  // The flag is read when a module's compilation starts, and only then: on for this one.
  setFlagsFromString(`--wasm-eager-tier-up-function=${parser}`);
  // A compilation in progress does not keep Node's event loop alive: `waybill migrate` would exit.
  const keepAlive = setInterval(() => {}, 1000);
  try {
    return await wasm.compile(bytes);
  } finally {
    clearInterval(keepAlive);
    setFlagsFromString('--wasm-eager-tier-up-function=-1');
  }
}

/** The index of the function a WebAssembly module exports under `name`, from its export section. */
export function exportedFunctionIndex(bytes: Uint8Array, name: string): number | null {
  let at = 8; // magic and version
  const unsigned = () => {
    let value = 0;
    let shift = 0;
    let byte: number;
    do {
      byte = bytes[at++] ?? 0;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
    } while (byte & 0x80 && at < bytes.length);
    return value;
  };
  const EXPORT_SECTION = 7;
  const FUNCTION_KIND = 0;
  const wanted = new TextEncoder().encode(name);
  while (at < bytes.length) {
    const section = bytes[at++];
    const size = unsigned();
    const end = at + size;
    if (section === EXPORT_SECTION) {
      const count = unsigned();
      for (let i = 0; i < count && at < end; i++) {
        const length = unsigned();
        const matches =
          length === wanted.length && wanted.every((byte, offset) => bytes[at + offset] === byte);
        at += length;
        const kind = bytes[at++];
        const index = unsigned();
        if (matches && kind === FUNCTION_KIND) return index;
      }
      return null;
    }
    at = end;
  }
  return null;
}
