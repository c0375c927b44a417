import type { RunRecord } from '../index.js';
import { exitCodeFor, type ErrorKind } from '../util/errors.js';

/**
 * brig's exit codes: how a run ended (what a command returns) and, for a refusal, the error's
 * kind (errors.ts). docs/cli.md shows this table; test/unit/cli/exit-codes.test.ts pins the two.
 *
 * 1 is "the work failed", the code a shell `if` most often meets. Codes 2–7 follow the error
 * kinds the HTTP face maps to 400–503. 8–10 are outcomes a script acts on differently (wait
 * again, look for the file, stop trusting the ledger). A bug in brig is 70, sysexits'
 * EX_SOFTWARE, far from the rest; 125–127 and 128+N stay the shell's. The child's own exit
 * status is in `--json` (`exitCode`), not passed through: many ends have none (killed,
 * watchdog) and its values would collide with these.
 */
export const EXIT = {
  ok: 0,
  runFailed: 1,
  waitTimedOut: 8,
  outputsMissing: 9,
} as const;

export interface ExitRow {
  code: number;
  name: string;
  meaning: string;
}

const KIND_MEANING: Record<ErrorKind, string> = {
  invalid: 'invalid input: a usage error, a bad flag or value, an invalid policy file (`policy check`)',
  denied: 'denied: the lease or a policy says no (a capability, the SQL guard)',
  not_found: 'not found: no such run, lease or ref',
  conflict: 'conflict: the thing is in the wrong state (kill or steer an ended run, a second daemon)',
  limit: 'limit: an admission or size limit was hit (depth, children, queue, a byte cap)',
  unavailable: 'unavailable: the engine, the daemon, the image or a model cannot serve now',
  corrupt: 'ledger corrupt: the hash chain is broken (`audit verify` names the first bad line)',
  internal: 'internal: a bug in brig, or an engine that broke brig\'s assumptions (`BRIG_DEBUG=1` prints the stack)',
};

const KINDS: ErrorKind[] = ['invalid', 'denied', 'not_found', 'conflict', 'limit', 'unavailable', 'corrupt', 'internal'];

/** Every exit code, in order: the table of docs/cli.md. */
export function exitTable(): ExitRow[] {
  const rows: ExitRow[] = [
    { code: EXIT.ok, name: 'ok', meaning: 'ok: the command did what it was asked (a spawned run completed with every expected output)' },
    { code: EXIT.runFailed, name: 'run_failed', meaning: 'failed: a run ended other than `completed` (failed, killed, timed out, stuck); `doctor`: a check failed' },
    { code: EXIT.waitTimedOut, name: 'wait_timed_out', meaning: 'wait timed out: `wait --timeout` returned before the run ended (it goes on)' },
    { code: EXIT.outputsMissing, name: 'outputs_missing', meaning: 'expected outputs missing: the run completed but an `--expect` file is not in out/' },
    ...KINDS.map((k) => ({ code: exitCodeFor(k), name: k, meaning: KIND_MEANING[k] })),
  ];
  return rows.sort((a, b) => a.code - b.code);
}

/**
 * The exit code for runs a command waited on. A known bad end wins over not knowing yet:
 * failed (1), then completed without its outputs (9), then still going (8, or 0 when the
 * caller asked not to wait: `spawn --async`).
 */
export function exitForRuns(runs: RunRecord[], o: { notEnded: 'ok' | 'timedOut' }): number {
  const ended = runs.filter((r) => r.status === 'ended');
  if (ended.some((r) => r.endReason !== 'completed')) return EXIT.runFailed;
  if (ended.some((r) => r.missingOutputs.length > 0)) return EXIT.outputsMissing;
  if (ended.length < runs.length) return o.notEnded === 'ok' ? EXIT.ok : EXIT.waitTimedOut;
  return EXIT.ok;
}
