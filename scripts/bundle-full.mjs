#!/usr/bin/env node
/**
 * The full CLI (dist/cli/main.js) and everything it imports from dist/, zod and yaml as one
 * ES module graph with shared chunks (dist/full/): a one-shot `brig spawn` resolves a few dozen
 * files instead of ~530 (docs/performance.md). Every module is in the graph once — the dynamic
 * imports become chunks of the same graph — so no command runs half here and half in dist/.
 * import.meta.url in a bundled module is rewritten to its own file's URL, relative to the chunk,
 * so the paths it resolves (shipped policies, agents, helpers) stay those of dist/.
 *
 * The files are .mjs, so that they are ES modules wherever they are written (bin.ts imports
 * ../full/main.mjs beside the `brig` bundle, and falls back to dist/cli/main.js without it).
 *
 *   node scripts/bundle-full.mjs [--dist DIR] [--out DIR]
 */
import fs from 'node:fs';
import path from 'node:path';
import { builtinModules } from 'node:module';
import * as esbuild from 'esbuild';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? dflt : process.argv[i + 1];
};
const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = path.resolve(arg('--dist', path.join(ROOT, 'dist')));
const OUT = path.resolve(arg('--out', path.join(DIST, 'full')));
const BUILTIN = new Set(builtinModules);
/** Pure-JS packages folded in; every other package stays a package import (native parts, workers, lazy requires). */
const INLINE = new Set(['zod', 'yaml']);

const plugin = {
  name: 'full',
  setup(build) {
    build.onResolve({ filter: /.*/ }, (args) => {
      if (args.kind === 'entry-point') return undefined;
      if (args.path.startsWith('node:') || BUILTIN.has(args.path)) return { path: args.path, external: true };
      if (args.path.startsWith('.') || path.isAbsolute(args.path)) return undefined;
      const pkg = args.path.startsWith('@') ? args.path.split('/').slice(0, 2).join('/') : args.path.split('/')[0];
      return INLINE.has(pkg) ? undefined : { path: args.path, external: true };
    });
    build.onLoad({ filter: /\.js$/ }, async (args) => {
      if (!args.path.startsWith(DIST + path.sep)) return undefined;
      let text = await fs.promises.readFile(args.path, 'utf8');
      if (text.includes('import.meta.url')) {
        // Every chunk lands in OUT: the module's URL relative to it.
        const rel = path.relative(OUT, args.path).split(path.sep).join('/');
        text = text.replaceAll('import.meta.url', `new URL(${JSON.stringify(rel)}, import.meta.url).href`);
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
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  chunkNames: 'chunk-[hash]',
  outExtension: { '.js': '.mjs' },
  plugins: [plugin],
  logLevel: 'warning',
  legalComments: 'none',
  // A CommonJS part of a folded package requires a built-in: ES modules have no `require`.
  banner: { js: "import { createRequire as __brigRequire } from 'node:module'; const require = __brigRequire(import.meta.url);" },
  metafile: true,
});
const inputs = Object.keys(result.metafile.inputs);
const outputs = Object.keys(result.metafile.outputs).filter((o) => o.endsWith('.mjs'));
console.log(`${path.relative(ROOT, OUT)}: ${inputs.length} modules in ${outputs.length} files`);
