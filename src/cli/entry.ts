import type { ApiClient } from '../light.js';
import type { CliIO } from './command.js';
import { exitCodeFor } from '../util/errors.js';
import { main } from './cli.js';
import { enableTiming } from '../util/timing.js';

/**
 * Runs one brig command in this process with its standard streams: what both entries do
 * (main.js, the full CLI; brig.cjs, the thin commands through a daemon — bin.ts). `env` is the
 * process's environment, handed over by the entry (config/ and the entries are its only readers);
 * `daemon`, the daemon the entry already found answering (CliIO.daemon).
 */
export function runCli(argv: string[], env: NodeJS.ProcessEnv, o: { daemon?: ApiClient } = {}): void {
  // BRIG_TIMING=1: where the command's time goes, printed to stderr at exit (docs/cli.md).
  if (env.BRIG_TIMING === '1') enableTiming();

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
    env,
    isTTY: Boolean(process.stdout.isTTY),
    ...(process.stdout.isTTY && process.stdout.columns > 0 ? { columns: process.stdout.columns } : {}),
    hangup: hangup.signal,
    ...(o.daemon ? { daemon: o.daemon } : {}),
  };
  main(argv, io).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      // main() turns every error into a code; reaching here is a bug in brig (exit 70).
      process.stderr.write(`brig: internal error: ${String(e)}\n`);
      process.exitCode = exitCodeFor('internal');
    },
  );
}
