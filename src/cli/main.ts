#!/usr/bin/env node
import type { CliIO } from './command.js';
import { exitCodeFor } from '../util/errors.js';
import { main } from './cli.js';
import { enableTiming } from '../util/timing.js';

// BRIG_TIMING=1: where the command's time goes, printed to stderr at exit (docs/cli.md).
if (process.env.BRIG_TIMING === '1') enableTiming();

// A reader that goes away (`brig list | head -1`) is the end of the output, not an error:
// Node ignores SIGPIPE, so a write fails with EPIPE and, unhandled, crashes with a stack.
// Handled, the stream is destroyed (later writes are dropped, never thrown), long-running
// output stops through `hangup`, and the exit code is the command's own.
const hangup = new AbortController();
process.stdout.on('error', () => hangup.abort());
process.stderr.on('error', () => {});

const io: CliIO = {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  isTTY: Boolean(process.stdout.isTTY),
  ...(process.stdout.isTTY && process.stdout.columns > 0 ? { columns: process.stdout.columns } : {}),
  hangup: hangup.signal,
};
main(process.argv.slice(2), io).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    // main() turns every error into a code; reaching here is a bug in brig (exit 70).
    process.stderr.write(`brig: internal error: ${String(e)}\n`);
    process.exitCode = exitCodeFor('internal');
  },
);
