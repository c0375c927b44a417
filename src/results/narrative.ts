/**
 * The narrative cast: the one envelope a coordinator receives from a child (pure).
 *
 *   [Subagent Result: <label>]
 *   Status: Completed
 *   Condensation: Level 2 (LLM summary)
 *
 *   <body>
 *
 *   ---
 *   Runtime: 12.3s | Steps: 5 | Tokens: 4500 | Cost: $0.0135   (a local model's: Cost: local ($0))
 *   Condensation: Level 2 | Original: 15000 tokens | Ratio: 0.30
 *   Full result (drill in with read/grep/jq/sql/jsonpath): ref_… out/rows.jsonl (1234B, jsonl)
 *   Session: <session>
 *
 * Expected outputs the child did not leave are named on the status line; its error and, when
 * it did not complete, its stderr tail follow the body (errorPreservation) — no condensation
 * level drops them. Empty sections are left out. The child's content appears only in the body, which the caller
 * has already bounded by condensation; the footer is bounded too (MAX_ENVELOPE_REFS handles).
 * A body line that looks like the envelope's own framing (a `[Subagent Result:` head, a `---`
 * rule, a footer or status line, the `== ` run separator of a multi-run answer) is shown quoted
 * with `| `: a child cannot forge a second envelope, a footer or another run's result.
 */
import type { Condensed } from './condense.js';
import type { ResultRef } from './types.js';

export interface EnvelopeInput {
  label: string;
  /** completed | failed | killed | swept | watchdog_timeout | ghost_sweep, or free text. */
  status: string;
  /** Who killed it, for `killed`. */
  killedBy?: string;
  /** Cut short (killed, timed out): the outputs are what it had written by then. */
  partial?: boolean;
  /** Expected outputs it did not leave. */
  missingOutputs?: readonly string[];
  /** The run's error and stderr tail (child text: quoted like the body). */
  errors?: string;
  condensed: Pick<Condensed, 'level' | 'levelName' | 'body' | 'originalTokens' | 'ratio'>;
  runtimeMs?: number;
  steps?: number;
  tokens?: number;
  /** null: the model had no price — shown as unknown, never as 0. */
  costUsd?: number | null;
  /** The model was brig's own local one: the cost line says `local ($0)`, not a price. */
  costLocal?: boolean;
  refs?: readonly (Pick<ResultRef, 'ref' | 'bytes' | 'kind'> & { path?: string })[];
  /** A repository's change, one line (brig's words: the counts, the patch and stat refs). */
  changes?: string;
  /** brig's own notes on how the run was made (e.g. an image fallback), one line each. */
  notes?: readonly string[];
  session?: string;
}

/**
 * One handle line per ResultRef, up to this many: a child that writes thousands of files must
 * not flood its coordinator through the footer (INV-3). The rest are counted in one line.
 */
export const MAX_ENVELOPE_REFS = 20;

const STATUS_WORDS: Record<string, string> = {
  completed: 'Completed',
  failed: 'Failed',
  killed: 'Killed',
  swept: 'Swept',
  watchdog_timeout: 'Timed out (watchdog)',
  ghost_sweep: 'Swept (ghost)',
};

export function renderEnvelope(e: EnvelopeInput): string {
  const status =
    (STATUS_WORDS[e.status] ?? e.status) +
    (e.status === 'killed' && e.killedBy ? ` (by ${e.killedBy})` : '') +
    (e.partial ? ' — partial: its outputs are what it wrote before it was stopped' : '') +
    (e.missingOutputs?.length ? ` — missing expected output${e.missingOutputs.length > 1 ? 's' : ''}: ${oneLine(e.missingOutputs.slice(0, 10).join(', '))}${e.missingOutputs.length > 10 ? ` (and ${e.missingOutputs.length - 10} more)` : ''}` : '');
  const head = [`[Subagent Result: ${oneLine(e.label)}]`, `Status: ${status}`, `Condensation: Level ${e.condensed.level} (${e.condensed.levelName})`];
  const metrics = [
    e.runtimeMs !== undefined ? `Runtime: ${(e.runtimeMs / 1000).toFixed(1)}s` : '',
    e.steps !== undefined ? `Steps: ${e.steps}` : '',
    e.tokens !== undefined ? `Tokens: ${e.tokens}` : '',
    e.costLocal && e.costUsd === 0 ? 'Cost: local ($0)' : e.costUsd === null ? 'Cost: unknown' : e.costUsd !== undefined ? `Cost: $${e.costUsd.toFixed(4)}` : '',
  ].filter(Boolean);
  const foot = [
    metrics.join(' | '),
    `Condensation: Level ${e.condensed.level} | Original: ${e.condensed.originalTokens} tokens | Ratio: ${e.condensed.ratio.toFixed(2)}`,
    e.changes ? oneLine(e.changes) : '',
    ...(e.notes ?? []).map(oneLine),
    ...(e.refs ?? []).slice(0, MAX_ENVELOPE_REFS).map((r) => `Full result (drill in with read/grep/jq/sql/jsonpath): ${r.ref}${r.path ? ` ${oneLine(r.path).replace(/\s/g, '_')}` : ''} (${r.bytes}B, ${r.kind})`),
    (e.refs?.length ?? 0) > MAX_ENVELOPE_REFS
      ? `Full results: ${e.refs!.length - MAX_ENVELOPE_REFS} more ResultRefs not listed here (ref list on this run shows them all)`
      : '',
    e.session ? `Session: ${oneLine(e.session)}` : '',
  ].filter(Boolean);
  const body = quoteFraming(e.condensed.body.trim());
  const errors = quoteFraming((e.errors ?? '').trim());
  return [head.join('\n'), body, errors, `---\n${foot.join('\n')}`].filter((s) => s.length > 0).join('\n\n') + '\n';
}

/** Lines of the envelope's own framing, and of the run separator a multi-run answer uses. */
const FRAMING = /^\s*(\[Subagent Result:|-{3,}\s*$|={2,}\s|(Status|Condensation|Runtime|Session|Changes|Image|Resume|Full results?)\s*[:(|])/i;

/** Each body line that could pass for the envelope's framing, quoted with `| ` (pure). */
export function quoteFraming(body: string): string {
  return body
    .split('\n')
    .map((l) => (FRAMING.test(l) ? `| ${l}` : l))
    .join('\n');
}

function oneLine(s: string): string {
  return s.replace(/[\r\n]+/g, ' ').slice(0, 200);
}
