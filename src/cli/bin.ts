#!/usr/bin/env node
/**
 * `brig`: the thin commands (thin.ts) through a daemon that answers run here, from this one file
 * once bundled (dist/cli/brig.cjs, scripts/bundle-cli.mjs); every other command — and a thin
 * one without a daemon — is the full CLI's, loaded whole, so that no command runs half in the
 * bundle and half in dist/'s modules. The full CLI is dist/full/main.mjs when the build made it
 * (scripts/bundle-full.mjs: the same modules as one graph of a few dozen files, which a one-shot
 * `brig spawn` loads in about half the time — docs/performance.md), else dist/cli/main.js.
 */
import { homeFrom, socketPathFor } from '../config/paths.js';
import { runCli } from './entry.js';
import { daemonAnswering, isThinCommand, thinVersion } from './thin.js';

const argv = process.argv.slice(2);
const env = process.env;
// Not a literal: the bundle leaves it to be resolved beside brig.cjs at run time (dist/full/).
const BUNDLED = ['..', 'full', 'main.mjs'].join('/');
const missing = (e: unknown) =>
  e instanceof Error && (e as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND' && e.message.includes(`/full/main.mjs'`);
const full = () =>
  import(BUNDLED)
    .catch((e: unknown) => (missing(e) ? import('./main.js') : Promise.reject(e)))
    .catch((e: unknown) => {
      process.stderr.write(`brig: internal error: the full CLI did not load: ${String(e)}\n`);
      process.exitCode = 70;
    });

// The version needs no daemon and no module beyond this file.
const version = argv.length === 1 && argv[0] === '--version' ? thinVersion() : undefined;
if (version !== undefined) process.stdout.write(`brig ${version}\n`);
else if (!isThinCommand(argv)) void full();
else
  void daemonAnswering(socketPathFor(homeFrom(env))).then((daemon) => {
    if (daemon) runCli(argv, env, { daemon });
    else void full();
  });
