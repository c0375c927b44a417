/**
 * One jail from create to destroy: create (verified), start, wait with a deadline, collect
 * /workspace/out, destroy. The jail is destroyed on every path, the error path included
 * (INV-8: no container or volume outlives its run). How the run ended is data on the result,
 * never an exception; only a jail that could not be created at all throws.
 *
 * This is the engine-level lifecycle the first `brig spawn` and the spawn benchmark use; the
 * supervisor (runs/) adds leases, the broker, admission and the ledger on top of the same
 * JailDriver calls.
 */
import { toBrigError } from '../util/errors.js';
import type { CollectCaps, CollectReport, JailDriver, JailSpec, StreamTails } from './types.js';

export const DEFAULT_COLLECT_CAPS: CollectCaps = Object.freeze({
  perFileBytes: 8 * 1024 * 1024,
  perRunBytes: 64 * 1024 * 1024,
  maxEntries: 10_000,
});

export interface RunOnceOptions {
  timeoutMs: number;
  /** Host directory (must not exist) for /workspace/out; absent → nothing is collected. */
  collectTo?: string;
  caps?: CollectCaps;
}

export interface RunOnceTimings {
  createMs: number;
  startMs: number;
  runMs: number;
  collectMs: number;
  destroyMs: number;
}

export interface RunOnceResult {
  runId: string;
  endReason: 'completed' | 'failed' | 'watchdog_timeout';
  exitCode: number | null;
  oomKilled: boolean;
  tails: StreamTails;
  collected: CollectReport | null;
  error: { code: string; message: string } | null;
  timings: RunOnceTimings;
}

/** Pure: how a run ended, from what was observed. */
export function endReasonOf(o: { timedOut: boolean; exitCode: number | null; collectFailed: boolean }): RunOnceResult['endReason'] {
  if (o.timedOut) return 'watchdog_timeout';
  return o.exitCode === 0 && !o.collectFailed ? 'completed' : 'failed';
}

export async function runJailOnce(driver: JailDriver, spec: JailSpec, opts: RunOnceOptions): Promise<RunOnceResult> {
  const t: RunOnceTimings = { createMs: 0, startMs: 0, runMs: 0, collectMs: 0, destroyMs: 0 };
  let mark = performance.now();
  const lap = () => {
    const now = performance.now();
    const d = Math.round((now - mark) * 10) / 10;
    mark = now;
    return d;
  };
  const jail = await driver.create(spec);
  t.createMs = lap();
  let timedOut = false;
  let exitCode: number | null = null;
  let oomKilled = false;
  let collected: CollectReport | null = null;
  let error: RunOnceResult['error'] = null;
  let timer: NodeJS.Timeout | undefined;
  try {
    await jail.start();
    t.startMs = lap();
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), opts.timeoutMs);
    });
    const waited = jail.wait();
    if ((await Promise.race([waited, deadline])) === 'timeout') {
      timedOut = true;
      await jail.kill();
    }
    const exit = await waited;
    exitCode = exit.exitCode;
    oomKilled = exit.oomKilled;
    t.runMs = lap();
    if (opts.collectTo !== undefined) {
      try {
        collected = await jail.collect(opts.collectTo, opts.caps ?? DEFAULT_COLLECT_CAPS);
        // A file over the per-file cap was left out (the others kept): still the run's error.
        const big = collected.tooLarge?.[0];
        if (big) error = { code: 'ref_too_large', message: `out/${big.path} is over the per-file cap and was not collected; the other outputs were` };
      } catch (e) {
        const be = toBrigError(e);
        error = { code: be.code, message: be.message };
      }
      t.collectMs = lap();
    }
  } catch (e) {
    const be = toBrigError(e);
    error ??= { code: be.code, message: be.message };
  } finally {
    clearTimeout(timer);
    lap();
    await jail.destroy();
    t.destroyMs = lap();
  }
  return {
    runId: spec.runId,
    endReason: endReasonOf({ timedOut, exitCode, collectFailed: error !== null }),
    exitCode,
    oomKilled,
    tails: jail.tails(),
    collected,
    error,
    timings: t,
  };
}
