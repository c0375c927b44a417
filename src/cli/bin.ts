#!/usr/bin/env node
/**
 * `brig`: the thin commands (thin.ts) through a listening daemon run here, from this one file
 * once bundled (dist/cli/brig.cjs, scripts/bundle-cli.mjs); every other command — and a thin
 * one without a daemon — is the full CLI's (main.js), loaded whole, so that no command runs
 * half in the bundle and half in dist/'s modules.
 */
import { homeFrom, socketPathFor } from '../config/paths.js';
import { runCli } from './entry.js';
import { daemonListening, isThinCommand } from './thin.js';

const argv = process.argv.slice(2);
const env = process.env;
const full = () =>
  import('./main.js').catch((e: unknown) => {
    process.stderr.write(`brig: internal error: the full CLI did not load: ${String(e)}\n`);
    process.exitCode = 70;
  });

if (!isThinCommand(argv)) void full();
else
  void daemonListening(socketPathFor(homeFrom(env))).then((up) => {
    if (up) runCli(argv, env);
    else void full();
  });
