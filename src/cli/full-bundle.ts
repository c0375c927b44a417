/**
 * Runs the full CLI's one bundle (dist/full/main.cjs, scripts/bundle-full.mjs) with V8's code
 * cache: the bytecode V8 compiled for it in an earlier process, read from beside the bundle
 * instead of parsing and compiling ~2.7 MB again. Node 20 has no compile cache for modules
 * (module.enableCompileCache is Node 22's), so the bundle is a CommonJS file compiled here by
 * vm.Script — what Node's own CommonJS loader does, plus `cachedData`.
 *
 * Two caches, by what the command loads: `supervisor` for the commands that may compose a
 * supervisor in this process (a one-shot spawn, serve, …), `cli` for the rest — a cache holds
 * the functions its writer compiled, so a help text's cache would leave a spawn compiling most
 * of its own. A cache is written at the process's exit when it was absent or V8 rejected it (a
 * new build, another node), to a temporary file renamed over it; never otherwise.
 *
 * Trusts: the cache as it trusts the bundle beside it — it is compiled code. So it is read only
 * when it has the bundle's owner and no group or other write, and written only beside the
 * bundle (a directory the user running brig cannot write gets none: the run is only slower).
 * V8 refuses a cache made from another source, V8 version or flags (cachedDataRejected).
 * Fails: never because of the cache; an absent bundle is the caller's to fall back from.
 */
import { isAscii } from 'node:buffer';
import fs from 'node:fs';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

/** The commands that may compose a supervisor in this process: their cache holds its modules' code. */
const SUPERVISOR_COMMANDS = new Set(['spawn', 'serve', 'resume', 'apply', 'graph', 'mcp', 'replay']);

export function cacheClass(argv: readonly string[]): 'supervisor' | 'cli' {
  return SUPERVISOR_COMMANDS.has(argv[0] ?? '') ? 'supervisor' : 'cli';
}

export function cacheFileFor(bundle: string, argv: readonly string[]): string {
  return `${bundle}.${cacheClass(argv)}.v8cache`;
}

/** The cache's bytes when it may be used: the bundle's owner, written by no one else. */
function trustedCache(file: string, bundleUid: number): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    const st = fs.fstatSync(fd);
    if (!st.isFile() || st.uid !== bundleUid || (st.mode & 0o022) !== 0) return undefined;
    return fs.readFileSync(fd);
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/**
 * Runs `bundle` as the main program with `argv` (the command's own arguments). False when there
 * is no bundle (the caller loads dist/cli/main.js instead); anything the bundle throws is thrown.
 */
export function runFullBundle(bundle: string, argv: readonly string[]): boolean {
  let source: string;
  let uid: number;
  try {
    uid = fs.statSync(bundle).uid;
    // The bundle is ASCII (bundle-full.mjs makes it so): Latin-1 is the same text, ~3× faster to decode than UTF-8.
    const bytes = fs.readFileSync(bundle);
    source = bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
  const cacheFile = cacheFileFor(bundle, argv);
  const cachedData = trustedCache(cacheFile, uid);
  // The shebang line is emptied, not dropped: line numbers in a stack stay the bundle's.
  // No importModuleDynamically: in Node 20 a script compiled from a cache loses it (an import()
  // fails with ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING), and USE_MAIN_CONTEXT_DEFAULT_LOADER warns
  // as experimental — so the bundle holds no import() at all (bundle-full.mjs refuses one).
  const script = new vm.Script(Module.wrap(source.replace(/^#!.*/, '')), { filename: bundle, ...(cachedData ? { cachedData } : {}) });
  if (cachedData === undefined || script.cachedDataRejected === true) {
    process.once('exit', () => {
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        fs.writeFileSync(tmp, script.createCachedData(), { mode: 0o644, flag: 'wx' });
        fs.renameSync(tmp, cacheFile);
      } catch {
        fs.rmSync(tmp, { force: true });
      }
    });
  }
  const mod = new Module(bundle);
  mod.filename = bundle;
  const require = createRequire(bundle);
  const run = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;
  run.call(mod.exports, mod.exports, require, mod, bundle, path.dirname(bundle));
  return true;
}
