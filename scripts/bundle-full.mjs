#!/usr/bin/env node
/**
 * The full CLI (dist/cli/main.js) and everything it imports from dist/, zod and yaml as one
 * CommonJS file, dist/full/main.cjs: a one-shot `brig spawn` reads one file instead of resolving
 * ~530 modules, and `brig` (src/cli/full-bundle.ts) compiles it with V8's code cache kept beside
 * it, so what a command compiled once it does not compile again (docs/performance.md). Every
 * module is in the file once — a dynamic import of dist/ becomes a lazy initializer of the same
 * file — so no command runs half here and half in dist/. import.meta.url in a bundled module is
 * rewritten to its own file's URL, relative to the bundle (`__brigUrl`), so the paths it
 * resolves (shipped policies, agents, helpers) stay those of dist/. The pure-JS packages a
 * one-shot spawn runs (INLINE: zod, yaml, the engine client, the archive streams, the logger)
 * are folded in, with the files of theirs that must stay lazy as stand-ins (LAZY); every other
 * package stays a require (native parts, workers, what only some commands load). Each build
 * gets its own id (`__BRIG_BUILD_ID__`), the key of what caches this code's results
 * (lease/policy-cache.ts). The bundle holds no import(): a script compiled from V8's code cache
 * has no loader for one in Node 20 (a built-in's becomes a require; any other fails the build).
 *
 *   node scripts/bundle-full.mjs [--dist DIR] [--out DIR]
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { builtinModules } from 'node:module';
import { isAscii } from 'node:buffer';
import * as esbuild from 'esbuild';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? dflt : process.argv[i + 1];
};
const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.resolve(arg('--dist', path.join(ROOT, 'dist')));
const OUT = path.resolve(arg('--out', path.join(DIST, 'full')));
const BUILTIN = new Set(builtinModules);
/**
 * Pure-JS packages folded in; every other package stays a package import (native parts, workers,
 * lazy requires). The engine's client and the archives it reads are on every one-shot spawn's
 * path: required from node_modules they cost ~40 ms of resolving and compiling per process
 * (issue 34), in the bundle the code cache holds them. dockerode's and docker-modem's own
 * dependencies come with them (their nested copies too: a package's own node_modules resolves
 * first, as node resolves it).
 */
const INLINE = new Set([
  'zod', 'yaml',
  'dockerode', 'docker-modem', 'split-ca', 'debug', 'ms', 'supports-color', 'has-flag', 'readable-stream', 'inherits', 'string_decoder', 'safe-buffer', 'util-deprecate',
  'tar-stream', 'tar-fs', 'streamx', 'b4a', 'fast-fifo', 'text-decoder', 'events-universal', 'bare-events', 'queue-tick', 'bl', 'buffer', 'base64-js', 'ieee754', 'fs-constants', 'end-of-stream', 'once', 'wrappy', 'pump', 'chownr', 'mkdirp-classic', '@balena/dockerignore',
  'pino', 'pino-std-serializers', 'sonic-boom', 'atomic-sleep', 'on-exit-leak-free', 'quick-format-unescaped', 'safe-stable-stringify', '@pinojs/redact', 'process-warning',
]);
/**
 * Files of inlined packages that stay lazy, as dist/jail/docker/dockerode.ts keeps them outside
 * the bundle: dockerode's BuildKit session (@grpc/*, protobufjs) and docker-modem's SSH transport
 * (ssh2, a native part) are required at the top of their packages but called only by a BuildKit
 * build and an ssh:// engine. Each becomes a stand-in whose function export requires the real
 * file (by its package path, from node_modules) on its first call; buildkit, required inside a
 * function already, is left a require of the real file. pino's transport (a worker thread whose
 * file pino finds by its own __dirname) the same way: brig's logger writes to a stream, no
 * transport, so it never loads.
 */
const LAZY = new Map([
  ['dockerode/lib/session.js', 'function'],
  ['docker-modem/lib/ssh.js', 'function'],
  ['dockerode/lib/buildkit.js', 'require'],
  // pino's transports run in a worker whose file it finds by __dirname: brig's logger has none.
  ['pino/lib/transport.js', 'function'],
]);
/** A relative require inside a package, as `pkg/path/file.js`, when that is a LAZY file. */
function lazyTarget(args) {
  if (!args.path.startsWith('.')) return undefined;
  const m = /^(.*[\\/]node_modules[\\/])((?:@[^\\/]+[\\/])?[^\\/]+)[\\/]/.exec(args.importer);
  if (!m) return undefined;
  const inPkg = path.relative(m[1] + m[2], path.resolve(path.dirname(args.importer), args.path)).split(path.sep).join('/');
  const id = `${m[2].split(path.sep).join('/')}/${inPkg.replace(/\.js$/, '')}.js`;
  return LAZY.has(id) ? id : undefined;
}
/** dist/jail/docker/dockerode.js, in the bundle: dockerode itself (its lazy files are LAZY's). */
const DOCKERODE_SHIM = path.join(DIST, 'jail', 'docker', 'dockerode.js');

const plugin = {
  name: 'full',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      if (args.path.startsWith('node:') || BUILTIN.has(args.path)) return { path: args.path, external: true };
      const lazy = lazyTarget(args);
      if (lazy) return LAZY.get(lazy) === 'require' ? { path: lazy, external: true } : { path: lazy, namespace: 'lazy' };
      if (args.path.startsWith('.') || path.isAbsolute(args.path)) return undefined;
      const pkg = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      return INLINE.has(pkg) ? undefined : { path: args.path, external: true };
    });
    build.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => ({
      // By a require esbuild does not follow (the real file must stay out of the bundle: its
      // __dirname is its own), made beside the bundle so it resolves from node_modules.
      contents: `let real; module.exports = function deferred(...a) { real ??= require('node:module').createRequire(__filename)(${JSON.stringify(args.path)}); return real.apply(this, a); };`,
      loader: 'js',
      resolveDir: ROOT,
    }));
    build.onLoad({ filter: /\.js$/ }, async (args) => {
      if (args.path === DOCKERODE_SHIM) return { contents: "import Docker from 'dockerode';\nexport default Docker;\n", loader: 'js', resolveDir: path.dirname(args.path) };
      if (!args.path.startsWith(DIST + path.sep)) return undefined;
      let text = await fs.promises.readFile(args.path, 'utf8');
      // A dynamic import of a built-in (kept lazy for the thin path) becomes a require in a promise:
      // an import() in a script compiled from V8's code cache fails (below), so the bundle has none.
      text = text.replace(/\bimport\((['"])(node:[a-z_/]+)\1\)/g, (_, q, id) => `Promise.resolve().then(() => { const m = require(${q}${id}${q}); return { __proto__: m, default: m }; })`);
      if (text.includes('import.meta.url')) {
        // The bundle lands in OUT: the module's file relative to it.
        const rel = path.relative(OUT, args.path).split(path.sep).join('/');
        text = text.replaceAll('import.meta.url', `__brigUrl(${JSON.stringify(rel)})`);
      }
      return { contents: text, loader: 'js', resolveDir: path.dirname(args.path) };
    });
  },
};

fs.rmSync(OUT, { recursive: true, force: true });
const result = await esbuild.build({
  entryPoints: { main: path.join(DIST, 'cli/main.js') },
  outdir: OUT,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  outExtension: { '.js': '.cjs' },
  plugins: [plugin],
  logLevel: 'warning',
  // import.meta left in a module would be an empty object here: every use is rewritten above.
  logOverride: { 'empty-import-meta': 'error' },
  legalComments: 'none',
  // ASCII only: the loader reads it as Latin-1, ~3 ms for 2.7 MB against ~10 ms decoding UTF-8
  // (esbuild escapes strings, names and patterns; the comments it keeps are escaped below).
  charset: 'ascii',
  // The top-level require and __dirname, which a bundled module's own `require` may shadow.
  banner: { js: "const __brigUrl = (rel) => require('node:url').pathToFileURL(require('node:path').join(__dirname, rel)).href;" },
  // This build's id: caches of what this code computed (lease/policy-cache.ts) are its own.
  define: { __BRIG_BUILD_ID__: JSON.stringify(crypto.randomUUID()) },
  metafile: true,
  write: false,
});
fs.mkdirSync(OUT, { recursive: true });
/**
 * esbuild's __toESM makes a fresh namespace object for every import of a CommonJS module — one
 * getter per property, per importing module: ~220 sites here (node:fs, node:crypto, … imported
 * by module after module), ~12 ms of a one-shot spawn's start in a profile. The namespace is a
 * read-only view whose getters read the module live, so one per module (and mode) serves every
 * importer: the helper is kept as __toESM_each and __toESM hands back the one already made.
 */
function memoizeToESM(text) {
  const head = 'var __toESM = (mod, isNodeMode, target) =>';
  const at = text.indexOf(head);
  if (at === -1) {
    // No module imported CommonJS as ESM: no helper. One under another shape is not guessed at.
    if (/\b__toESM\b/.test(text)) throw new Error("the bundle's __toESM helper is not the one bundle-full.mjs memoizes: check esbuild's helpers");
    return text;
  }
  const tail = '\n));\n';
  const end = text.indexOf(tail, at);
  if (end === -1 || !text.slice(at, end).includes('__copyProps(')) throw new Error("the bundle's __toESM helper is not the one bundle-full.mjs memoizes: check esbuild's helpers");
  const memo = [
    'var __toESM_seen = new WeakMap();',
    'var __toESM = (mod, isNodeMode) => {',
    '  if (mod === null || (typeof mod !== "object" && typeof mod !== "function")) return __toESM_each(mod, isNodeMode);',
    '  let made = __toESM_seen.get(mod);',
    '  if (!made) __toESM_seen.set(mod, (made = [void 0, void 0]));',
    '  return made[isNodeMode ? 1 : 0] ??= __toESM_each(mod, isNodeMode);',
    '};',
    '',
  ].join('\n');
  const cut = end + tail.length;
  return `${text.slice(0, at)}var __toESM_each = (mod, isNodeMode, target) =>${text.slice(at + head.length, cut)}${memo}${text.slice(cut)}`;
}

for (const f of result.outputFiles) {
  // What esbuild left beyond ASCII is in comments (it escapes everything else): escaped there too.
  const text = memoizeToESM(f.text).replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  fs.writeFileSync(f.path, text, { mode: 0o755 });
  if (!isAscii(fs.readFileSync(f.path))) throw new Error(`${f.path} is not ASCII after escaping`);
}
// Node 20 runs an import() of a script compiled from a code cache without its loader
// (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING): the bundle must hold none.
const dynamic = Object.values(result.metafile.outputs).flatMap((o) => o.imports.filter((i) => i.kind === 'dynamic-import').map((i) => i.path));
if (dynamic.length > 0) throw new Error(`the full bundle holds dynamic imports (${[...new Set(dynamic)].join(', ')}): import it statically, or lazily by require (createRequire)`);
const inputs = Object.keys(result.metafile.inputs);
const outputs = Object.keys(result.metafile.outputs).filter((o) => o.endsWith('.cjs'));
console.log(`${path.relative(ROOT, OUT)}: ${inputs.length} modules in ${outputs.length} files`);
