#!/usr/bin/env node
/**
 * `make build`'s second step: dist/cli/brig.cjs, the `brig` command (src/cli/bin.ts) as one
 * CommonJS file — the thin commands (src/cli/thin.ts THIN_COMMANDS) and everything they import
 * statically, from the built dist/. Every other dynamic import (the full CLI, the other
 * commands, the supervisor, help) stays a dynamic import of dist/'s own ES module, loaded only
 * when a command needs it. Refused, so the thin path cannot grow heavy unnoticed:
 *   - a package import in the bundle (it would be required on every thin command);
 *   - import.meta in a bundled module (CommonJS has none: it would break at run time).
 * The architecture rules stay on src/ (test/arch); test/integration/cli/thin-path.test.ts
 * proves what the bundle loads.
 *
 *   node scripts/bundle-cli.mjs [--dist DIR] [--out FILE]
 */
import fs from 'node:fs';
import path from 'node:path';
import { builtinModules } from 'node:module';
import { pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? dflt : process.argv[i + 1];
};
const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.resolve(arg('--dist', path.join(ROOT, 'dist')));
const OUT = path.resolve(arg('--out', path.join(DIST, 'cli/brig.cjs')));
const BUILTIN = new Set(builtinModules);

const { THIN_COMMANDS } = await import(pathToFileURL(path.join(DIST, 'cli/thin.js')).href);
const thinFiles = new Set(Object.values(THIN_COMMANDS).map((f) => path.join(DIST, 'cli/commands', `${f}.js`)));

/** Keeps the thin commands' modules inside; every other dynamic import points at dist/ from OUT. */
const thinOnly = {
  name: 'thin-only',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      if (args.path.startsWith('node:') || BUILTIN.has(args.path)) return { path: args.path, external: true };
      if (!args.path.startsWith('.')) return { errors: [{ text: `${path.relative(DIST, args.importer)} imports the package ${args.path}: a thin command would load it (import it lazily, or keep the command out of THIN_COMMANDS)` }] };
      const abs = path.resolve(args.resolveDir, args.path);
      if (args.kind !== 'dynamic-import' || thinFiles.has(abs)) return { path: abs };
      const rel = path.relative(path.dirname(OUT), abs);
      return { path: rel.startsWith('.') ? rel : `./${rel}`, external: true };
    });
  },
};

const result = await esbuild.build({
  entryPoints: [path.join(DIST, 'cli/bin.js')],
  outfile: OUT,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  plugins: [thinOnly],
  logLevel: 'warning',
  logOverride: { 'empty-import-meta': 'error' },
  // bin.js's own shebang is carried over by esbuild.
  legalComments: 'none',
  metafile: true,
  write: false,
});
const inputs = Object.keys(result.metafile.inputs);
await fs.promises.mkdir(path.dirname(OUT), { recursive: true });
await fs.promises.writeFile(OUT, builtinsAsIs(result.outputFiles[0].text), { mode: 0o755 });
await fs.promises.chmod(OUT, 0o755);
console.log(`${path.relative(ROOT, OUT)}: ${inputs.length} modules of dist/ in one file`);

/**
 * esbuild hands each `import x from 'node:fs'` of an ES module to CommonJS as
 * `__toESM(require("node:fs"))`: a fresh object with a getter per export (fs has ~100), made
 * again at every importing module — ~0.7 ms of a thin command's start for eleven such imports.
 * A built-in needs none of it: its `default` is the module itself and its named exports are
 * its own properties, so an object that inherits from it and adds `default` answers both.
 * Every `__toESM(require(…))` left in the bundle must be a built-in's (nothing else is external).
 */
function builtinsAsIs(text) {
  const out = text.replace(/__toESM\(require\("([^"]+)"\)\)/g, (all, name) => {
    if (!name.startsWith('node:') && !BUILTIN.has(name)) throw new Error(`bundle-cli: ${name} is required in ${path.relative(ROOT, OUT)} but is no built-in`);
    return `__builtin(require("${name}"))`;
  });
  const strict = '"use strict";\n';
  if (!out.includes(strict)) throw new Error('bundle-cli: no "use strict" prologue to put __builtin after');
  return out.replace(strict, `${strict}var __builtin = (m) => Object.create(m, { default: { value: m, enumerable: true } });\n`);
}

// The child's fetch() preload (scripts/fetch-proxy.cjs, copied as is) and the undici it loads
// on a first fetch() only (bundled: the jail has no node_modules).
await fs.promises.copyFile(path.join(ROOT, 'scripts/fetch-proxy.cjs'), path.join(DIST, 'child/fetch-proxy.cjs'));
await esbuild.build({
  stdin: { contents: "export { EnvHttpProxyAgent, setGlobalDispatcher } from 'undici';", resolveDir: ROOT, loader: 'js' },
  outfile: path.join(DIST, 'child/undici.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
