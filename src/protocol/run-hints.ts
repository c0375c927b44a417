/**
 * One-line hints the faces print about an ended run (pure, content-free): how to resume an
 * agent cut short, what a replay found.
 */
import type { RunRecord } from './runs.js';

/** What a resume hint needs of a run (structural: an envelope's run works too). */
export interface HintRun {
  id: string;
  kind?: string;
  status: string;
  endReason: string | null;
  error?: { code?: string } | null;
  result: unknown;
  timeoutMs?: number;
}

/**
 * How to continue an agent run cut short (watchdog_timeout, killed, budget_exceeded — the ends
 * `brig resume` takes, agent-resume.ts): one line for the envelope's footer and the CLI's run
 * view; null for any other run. A resumed run cut short again gets it too.
 */
export function resumeHint(run: HintRun): string | null {
  if (run.kind !== 'agent' || run.status !== 'ended') return null;
  const budget = run.error?.code === 'budget_exceeded' || (run.result as { endReason?: unknown } | null)?.endReason === 'budget_exceeded';
  if (run.endReason !== 'watchdog_timeout' && run.endReason !== 'killed' && !budget) return null;
  const timeout = run.endReason === 'watchdog_timeout' && run.timeoutMs ? ` --timeout ${Math.ceil((run.timeoutMs * 2) / 1000)}` : '';
  return `resume with: brig resume ${run.id}${timeout} (a new run continues this conversation)`;
}

/** The one-paragraph answer a face prints for an ended replay (content-free). */
export function replaySummary(r: RunRecord): string {
  const p = r.replay;
  const end = `the replay ended ${r.endReason ?? r.status}${r.error ? ` (${r.error.code})` : ''}`;
  if (!p) return `replay ${r.id} of ${r.replayOf ?? '?'}: no model call was made; ${end}`;
  if (p.divergence) return `replay ${r.id} of ${p.of}: diverged at step ${p.divergence.step} (model call ${p.divergence.call} of ${p.recorded} recorded): ${p.divergence.what}; ${end}`;
  return `replay ${r.id} of ${p.of}: replayed ${r.stepsExecuted} steps (${p.calls} of ${p.recorded} recorded model calls), no divergence; ${end}`;
}
