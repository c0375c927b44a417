/**
 * The context economy, as a labelled estimate (pure):
 *   estSavedTokens = max(0, round(materializedBytes / 4) − round(charsReentered / 4))
 *   savedRatio     = estSavedTokens / round(materializedBytes / 4), only when that is > 0.
 * materializedBytes counts only bytes written as refs; charsReentered is what entered the
 * coordinator (the envelope and any slices it pulled).
 */
import type { Savings } from '../protocol/index.js';

export type { Savings } from '../protocol/index.js';

export function savingsFor(materializedBytes: number, charsReentered: number): Savings {
  const wouldBe = Math.round(materializedBytes / 4);
  const estSavedTokens = Math.max(0, wouldBe - Math.round(charsReentered / 4));
  return {
    materializedBytes,
    charsReentered,
    estSavedTokens,
    ...(wouldBe > 0 ? { savedRatio: Math.round((estSavedTokens / wouldBe) * 1000) / 1000 } : {}),
  };
}

/** Per root: the sum of each run's estimate (each clamped on its own), ratio over the sum. */
export function rollUpSavings(runs: readonly Savings[]): Savings & { runs: number } {
  const materializedBytes = runs.reduce((s, r) => s + r.materializedBytes, 0);
  const charsReentered = runs.reduce((s, r) => s + r.charsReentered, 0);
  const estSavedTokens = runs.reduce((s, r) => s + r.estSavedTokens, 0);
  const wouldBe = runs.reduce((s, r) => s + Math.round(r.materializedBytes / 4), 0);
  return {
    runs: runs.length,
    materializedBytes,
    charsReentered,
    estSavedTokens,
    ...(wouldBe > 0 ? { savedRatio: Math.round((estSavedTokens / wouldBe) * 1000) / 1000 } : {}),
  };
}
