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
 *   Full results (drill in with read/grep/jq/sql/jsonpath):
 *   - out/events.jsonl — ref_… jsonl, 2.4 MB, 100,000 rows (id, kind)
 *   - answer.txt — ref_… text, 12.1 KB, 310 lines
 *   Session: <session>
 *
 * Each ref line says first what a coordinator picks by: the path, then the handle, kind,
 * humanized size and, for tables, rows and columns. How much condensation saved (the original's
 * tokens, the ratio) is brig's own bookkeeping: it is in the JSON answer, not the text.
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
  refs?: readonly EnvelopeRef[];
  /** A repository's change, one line (brig's words: the counts, the patch and stat refs). */
  changes?: string;
  /** brig's own notes on how the run was made (e.g. an image fallback), one line each. */
  notes?: readonly string[];
  session?: string;
}

/** What a ref line shows of a ResultRef. */
export type EnvelopeRef = Pick<ResultRef, 'ref' | 'bytes' | 'kind'> & Partial<Pick<ResultRef, 'path' | 'rows' | 'columns' | 'columnCount' | 'lines'>>;

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
  const refs = e.refs ?? [];
  const foot = [
    metrics.join(' | '),
    e.changes ? oneLine(e.changes) : '',
    ...(e.notes ?? []).map(oneLine),
    refs.length > 0 ? 'Full results (drill in with read/grep/jq/sql/jsonpath):' : '',
    ...refs.slice(0, MAX_ENVELOPE_REFS).map(refLine),
    refs.length > MAX_ENVELOPE_REFS ? `- and ${refs.length - MAX_ENVELOPE_REFS} more ResultRefs not listed here (the run's ref list shows them all)` : '',
    e.session ? `Session: ${oneLine(e.session)}` : '',
  ].filter(Boolean);
  const body = quoteFraming(e.condensed.body.trim());
  const errors = quoteFraming((e.errors ?? '').trim());
  return [head.join('\n'), body, errors, foot.length > 0 ? `---\n${foot.join('\n')}` : ''].filter((s) => s.length > 0).join('\n\n') + '\n';
}

/** Column names a ref line shows, and how much of each. */
const LINE_COLUMNS = 8;
const LINE_COLUMN_CHARS = 24;

/** `- out/events.jsonl — ref_… jsonl, 2.4 MB, 100,000 rows (id, kind)` (pure). */
export function refLine(r: EnvelopeRef): string {
  const where = r.path ? `${oneLine(r.path).replace(/\s/g, '_')} — ` : '';
  const facts = [`${r.ref} ${r.kind}`, humanBytes(r.bytes)];
  if (r.rows !== undefined) {
    const names = (r.columns ?? []).slice(0, LINE_COLUMNS).map((c) => oneLine(c).slice(0, LINE_COLUMN_CHARS));
    const total = r.columnCount ?? r.columns?.length ?? 0;
    const more = total > names.length ? `, +${total - names.length} more` : '';
    facts.push(`${count(r.rows, 'row')}${names.length ? ` (${names.join(', ')}${more})` : ''}`);
  } else if (r.lines !== undefined && r.kind === 'text') facts.push(count(r.lines, 'line'));
  return `- ${where}${facts.join(', ')}`;
}

/** `2.4 MB`, `812 B` — decimal units, as `docker images` and `ls -h --si` print (pure). */
export function humanBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  for (; v >= 1000 && i < units.length - 1; i++) v /= 1000;
  return i === 0 ? `${n} B` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

const count = (n: number, word: string) => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;

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
