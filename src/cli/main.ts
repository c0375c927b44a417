#!/usr/bin/env node
import { runCli } from './entry.js';

// The full CLI, as ES modules: every command, each loaded when asked for (registry.ts).
// `brig` itself is dist/cli/brig.cjs (bin.ts), which runs the thin commands through a daemon
// from one file and hands everything else to this entry.
runCli(process.argv.slice(2), process.env);
