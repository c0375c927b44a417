#!/usr/bin/env node
/**
 * `brig`: the thin commands (thin.ts) through a daemon that answers run here, from this one file
 * once bundled (dist/cli/brig.cjs, scripts/bundle-cli.mjs); every other command — and a thin
 * one without a daemon — is the full CLI's, loaded whole, so that no command runs half in the
 * bundle and half in dist/'s modules. The full CLI is dist/full/main.cjs when the build made it
 * (scripts/bundle-full.mjs: the same modules as one file, run with V8's code cache by
 * full-bundle.ts — docs/performance.md), else dist/cli/main.js.
 */
import path from 'node:path';
import { homeFrom, socketPathFor } from '../config/paths.js';
import { runCli } from './entry.js';
import { runFullBundle } from './full-bundle.js';
import { daemonAnswering, entryDir, isThinCommand, thinVersion } from './thin.js';

const argv = process.argv.slice(2);
const env = process.env;
const failed = (e: unknown) => {
  process.stderr.write(`brig: internal error: the full CLI did not load: ${String(e)}\n`);
  process.exitCode = 70;
};
const full = () => {
  // The bundle beside the entry's directory (brig.cjs is in dist/cli/, reached through a bin link).
  const dir = entryDir();
  const bundle = dir === undefined ? undefined : path.join(dir, '..', 'full', 'main.cjs');
  try {
    if (bundle !== undefined && runFullBundle(bundle, argv)) return;
  } catch (e) {
    failed(e);
    return;
  }
  import('./main.js').catch(failed);
};

// The version needs no daemon and no module beyond this file.
const version = argv.length === 1 && argv[0] === '--version' ? thinVersion() : undefined;
if (version !== undefined) process.stdout.write(`brig ${version}\n`);
else if (!isThinCommand(argv)) void full();
else
  void daemonAnswering(socketPathFor(homeFrom(env))).then((daemon) => {
    if (daemon) runCli(argv, env, { daemon });
    else void full();
  });
