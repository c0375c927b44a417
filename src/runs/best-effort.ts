/**
 * Release steps and steps that need the engine, done as far as the supervisor's life allows.
 *
 * Guarantees: a step that fails never stops the others and is never swallowed — its failure
 * is ledgered (content-free: what, and the error's code) as `run.release_failed`; a step
 * given a `Persist` is tried again, 0.5 s after the first failure and doubling up to 5 s,
 * until it succeeds or the supervisor stops (`signal`), and a success after failures is
 * ledgered `run.release_retried {what, attempts}`: one line for the first failure and one for
 * the success, however long the engine stays away. A step still waiting when the supervisor
 * stops is given up (its promise is no longer awaited) and left to the next start, which
 * redoes it from what was saved durably (`pendingEnd`, `unreleased`) and sweeps the rest.
 * Threat: an engine outage turning into leaked containers, volumes and disks, or lost files.
 */
import type { RunTable } from './run-table.js';

export interface Persist {
  /** Aborted when the supervisor stops: a step still failing (or hung) is left to the next start. */
  signal: AbortSignal;
  /** Which failures are worth another try (default: any). */
  retryable?: (code: string) => boolean;
  /** Failures of this step already ledgered (a retry after the first try): not ledgered again. */
  failedBefore?: number;
}

const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 5000;

function codeOf(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code.slice(0, 40) : 'unknown';
}

/** Resolves once signal aborts (never rejects); `off` takes the listener back. */
function aborted(signal: AbortSignal): { p: Promise<'aborted'>; off: () => void } {
  let off = () => {};
  const p = new Promise<'aborted'>((resolve) => {
    if (signal.aborted) return resolve('aborted');
    const on = () => resolve('aborted');
    signal.addEventListener('abort', on, { once: true });
    off = () => signal.removeEventListener('abort', on);
  });
  return { p, off };
}

/** Waits ms; false when the supervisor stopped meanwhile. */
function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const stop = aborted(signal);
    const timer = setTimeout(() => (stop.off(), resolve(true)), ms);
    void stop.p.then(() => (clearTimeout(timer), resolve(false)));
  });
}

/**
 * Runs `step`; on failure ledgers it and, with `persist`, tries again until it succeeds or the
 * supervisor stops. Resolves true when the step succeeded, false when it was given up.
 */
export async function bestEffort(table: RunTable, runId: string, what: string, step: () => Promise<unknown>, persist?: Persist): Promise<boolean> {
  let failures = persist?.failedBefore ?? 0;
  let wait = FIRST_RETRY_MS;
  // A retry of a step that just failed waits before its first try, as between any two.
  if (failures > 0 && persist && !(await pause(wait, persist.signal))) return false;
  for (;;) {
    let outcome: 'ok' | 'aborted' | { error: unknown };
    if (persist) {
      const stop = aborted(persist.signal);
      outcome = await Promise.race([Promise.resolve().then(step).then(() => 'ok' as const, (error: unknown) => ({ error })), stop.p]);
      stop.off();
    } else {
      outcome = await Promise.resolve().then(step).then(() => 'ok' as const, (error: unknown) => ({ error }));
    }
    if (outcome === 'ok') {
      if (failures > 0) table.ledger.append({ type: 'run.release_retried', runId, what, attempts: failures + 1 });
      return true;
    }
    if (outcome === 'aborted') return false;
    const code = codeOf(outcome.error);
    if (failures === 0) table.ledger.append({ type: 'run.release_failed', runId, what, code });
    failures++;
    if (!persist || !(persist.retryable?.(code) ?? true)) return false;
    wait = failures === 1 ? wait : Math.min(MAX_RETRY_MS, wait * 2);
    if (!(await pause(wait, persist.signal))) return false;
  }
}

/** A failure worth waiting out: the engine did not answer. */
export const engineDown = (code: string): boolean => code === 'engine_unavailable';
