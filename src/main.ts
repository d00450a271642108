#!/usr/bin/env node
// The `waybill` command (its commands are in commands.ts). Node keeps the compiled code of what a
// process imports on disk, in its compile cache (compile-cache.ts: a folder only Waybill's user can
// write, in the user's cache folder; NODE_COMPILE_CACHE elsewhere, NODE_DISABLE_COMPILE_CACHE=1
// none), so that a process started again on this machine compiles nothing: about 100 ms less
// before a worker's first delivery (issue 25 item 3). It is turned on before anything else is
// imported; what this file imported would be compiled first (compile-cache.ts imports only Node's
// own modules).
import { enableWaybillCompileCache } from './compile-cache.ts';

enableWaybillCompileCache();
await import('./commands.ts');
