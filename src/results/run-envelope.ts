/**
 * From a finished run to what its coordinator receives: condense the result, cast the
 * envelope, and estimate the savings. Structural input (results/ does not import runs/):
 * any run record with these fields works.
 */
import fsp from 'node:fs/promises';
import { CONDENSE_DEFAULTS, L2_INPUT_BUDGETS, type CondenseOptions, condense } from './condense.js';
import { renderEnvelope } from './narrative.js';
import { viewFile, type TextView } from './result-view.js';
import { savingsFor } from './savings.js';
import { resumeHint, type ResultRef, type RunEnvelope } from '../protocol/index.js';

export interface EnvelopeRun {
  id: string;
  rootRunId: string;
  label: string | null;
  agent?: string;
  status: string;
  endReason: string | null;
  killedBy: string | null;
  startedAt: string | null;
  endedAt: string | null;
  stepsExecuted?: number;
  result: unknown;
  /** Bytes of a result too big to keep in the record: it is the `result.json` ref. */
  resultSpooled?: number | null;
  partial?: boolean;
  stdoutTail?: string;
  stderrTail?: string;
  error?: { code?: string; message?: string } | null;
  /** Expected outputs the run did not leave: named in the envelope's status line. */
  missingOutputs?: readonly string[];
  tokens?: number;
  costUsd?: number | null;
  /** Its model was brig's own local provider. */
  modelLocal?: boolean;
  /** A repository's change (--repo): the stat, and its base. */
  repo?: { ref: string; base: string };
  changes?: { filesChanged: number; insertions: number; deletions: number; commits: number; error?: string };
  /** The jail as verified: a fallback image is named in the footer (an agent spec's toolbox not built). */
  jail?: { imageFallback?: { note: string } };
  kind?: string;
  /** The run's timeout (ms): a resume hint offers twice it. */
  timeoutMs?: number;
}

export type { RunEnvelope } from '../protocol/index.js';

/** How an envelope is cast: condensation's options, and where a ref's bytes are (to read a spooled result). */
export interface EnvelopeOptions extends CondenseOptions {
  /** The host path of a ref's file (ResultStore.resolvePath); without it a spooled result is only named. */
  fileOf?: (ref: ResultRef) => string;
}

/** A spooled value up to this size is parsed whole (then shown as an inline one would be); a bigger one is streamed into a view. */
export const PARSE_SPOOLED_MAX_BYTES = 4 * 1024 * 1024;

/** An agent child's result is `{answer, files?, partial?, endReason?}`: its text is the answer. */
function agentAnswer(result: unknown): string | undefined {
  if (!result || typeof result !== 'object' || typeof (result as { answer?: unknown }).answer !== 'string') return undefined;
  return `${(result as { answer: string }).answer}${agentSuffix(result as Record<string, unknown>)}`;
}

/** What an agent's result says besides its answer: its files, and that it did not finish. */
function agentSuffix(r: Record<string, unknown>): string {
  const files = Array.isArray(r.files) && r.files.length > 0 ? `\nFiles: ${r.files.filter((f) => typeof f === 'string').join(', ')}` : '';
  const cut = r.partial === true ? `\n(The agent did not finish${typeof r.endReason === 'string' ? `: ${r.endReason}` : ''}; this is its salvage report.)` : '';
  return `${files}${cut}`;
}

/** A result value as text: an agent's answer, a string as it is, anything else as JSON. */
function valueText(value: unknown): string | undefined {
  const agent = agentAnswer(value);
  if (agent !== undefined) return agent;
  if (typeof value === 'string') return value;
  if (value !== undefined && value !== null) return JSON.stringify(value, null, 2);
  return undefined;
}

/** The error line of a run's error. */
function errorLine(e: NonNullable<EnvelopeRun['error']>): string {
  return `Error${e.code ? ` [${e.code}]` : ''}: ${e.message ?? ''}`;
}

/**
 * The text that condensation works on, when the record holds it: the result value, else
 * stdout (plus the error line when errors are not kept beside the body). A spooled value is
 * not in the record: resultInput reads it from its file.
 */
export function resultText(run: EnvelopeRun, withError = true): string {
  const value = valueText(run.result) ?? (run.resultSpooled ? `(the result is ${run.resultSpooled} bytes of JSON: the result.json ResultRef holds it whole; slice it)\n${run.stdoutTail ?? ''}` : (run.stdoutTail ?? ''));
  const error = withError && run.error ? `\n${errorLine(run.error)}` : '';
  return `${value}${error}`.trim();
}

/**
 * What condensation works from: the result text, or — for a value spooled to its
 * `result.json` ref — the stored file: parsed when it is small enough to hold, else a bounded
 * view of it (head, tail, error lines) streamed from disk. Never the placeholder sentence when
 * the file can be read. `wholeAt` names the ref for Level 3's marker.
 */
export async function resultInput(run: EnvelopeRun, refs: readonly ResultRef[], o: EnvelopeOptions & { withError: boolean }): Promise<{ input: string | TextView; wholeAt?: string }> {
  const valueRef = refs.find((r) => r.source === 'value');
  const spooled = !!run.resultSpooled && (run.result === undefined || run.result === null);
  if (!spooled || !valueRef || !o.fileOf) return { input: resultText(run, o.withError) };
  // An agent's answer is also its own text ref (answer.txt): the one to grep and read by line.
  const textRef = refs.find((r) => r.source === 'value' && r.path === 'answer.txt') ?? valueRef;
  const wholeAt = `ResultRef ${textRef.ref} (${textRef.path})`;
  const file = o.fileOf(valueRef);
  const errorTail = o.withError && run.error ? `\n${errorLine(run.error)}` : '';
  try {
    if (valueRef.bytes <= PARSE_SPOOLED_MAX_BYTES) {
      const text = valueText(JSON.parse(await fsp.readFile(file, 'utf8')) as unknown) ?? '';
      return { input: `${text}${errorTail}`.trim(), wholeAt };
    }
    // The view holds what the largest ask of it needs: Level 2's input of L2_INPUT_BUDGETS budgets, cut 60/40.
    const budget = (o.maxResultTokens ?? CONDENSE_DEFAULTS.maxResultTokens) * 4 * L2_INPUT_BUDGETS;
    const { view, answerRest } = await viewFile(file, { headChars: Math.ceil(budget * 0.6) + 1024, tailChars: Math.ceil(budget * 0.4) + 1024 });
    const suffix = `${answerRest ? agentSuffix(answerRest) : ''}${errorTail}`;
    return { input: suffix ? { ...view, chars: view.chars + suffix.length, tail: view.tail + suffix } : view, wholeAt };
  } catch {
    // An unreadable file (swept, damaged) degrades to what the record says.
    return { input: resultText(run, o.withError), wholeAt };
  }
}

/** Lines of a failed run's stderr kept in its envelope (errorPreservation), and their chars (≤ 1 KB inline). */
export const STDERR_TAIL_LINES = 20;
export const STDERR_TAIL_CHARS = 1024;

/**
 * errorPreservation: a run's error and, for a run that did not complete, the tail of its
 * stderr — beside the condensed body, so no level can drop them.
 */
export function errorSection(run: EnvelopeRun): string {
  const lines: string[] = [];
  if (run.error) lines.push(errorLine(run.error));
  const stderr = (run.stderrTail ?? '').trimEnd();
  if (run.endReason !== 'completed' && stderr) {
    const tail = stderr.slice(-STDERR_TAIL_CHARS).split('\n').slice(-STDERR_TAIL_LINES);
    lines.push(`stderr (last ${tail.length} line${tail.length === 1 ? '' : 's'}):`, ...tail);
  }
  return lines.join('\n');
}

const SOURCE_RANK: Record<ResultRef['source'], number> = { value: 0, changes: 1, out: 2, transcript: 3, stdout: 4, stderr: 5 };

/** The envelope's line for a repository's change: the stat, the patch ref, how to apply it. */
function changesLine(runId: string, repo: NonNullable<EnvelopeRun['repo']>, c: NonNullable<EnvelopeRun['changes']>, refs: readonly ResultRef[]): string {
  const patch = refs.find((r) => r.source === 'changes' && r.path === 'changes.patch');
  const stat = refs.find((r) => r.source === 'changes' && r.path === 'changes.stat');
  const counts = `${c.filesChanged} file${c.filesChanged === 1 ? '' : 's'} changed, +${c.insertions} -${c.deletions}${c.commits ? `, ${c.commits} commit${c.commits === 1 ? '' : 's'}` : ''}`;
  const where = `against ${repo.ref} (${repo.base.slice(0, 12)})`;
  const handles = [patch ? `patch ${patch.ref}` : `no patch kept${c.error ? ` (${c.error})` : ''}`, stat ? `stat ${stat.ref}` : ''].filter(Boolean).join(', ');
  return `Changes: ${counts} ${where}: ${handles}${patch && c.filesChanged > 0 ? ` — brig apply ${runId} --branch NAME` : ''}`;
}

/** brig's footer notes for a run: an image fallback, how to resume it. */
function notesOf(run: EnvelopeRun): string[] {
  const hint = resumeHint(run);
  return [...(run.jail?.imageFallback ? [`Image: ${run.jail.imageFallback.note}`] : []), ...(hint ? [`Resume: ${hint}`] : [])];
}

export async function buildRunEnvelope(run: EnvelopeRun, refs: readonly ResultRef[], opts: EnvelopeOptions = {}): Promise<RunEnvelope> {
  const keepErrors = opts.errorPreservation ?? CONDENSE_DEFAULTS.errorPreservation;
  const { fileOf: _fileOf, ...condenseOpts } = opts;
  const { input, wholeAt } = await resultInput(run, refs, { ...opts, withError: !keepErrors });
  const condensed = await condense(input, { ...condenseOpts, ...(wholeAt ? { wholeAt } : {}), knownPaths: [...(opts.knownPaths ?? []), ...refs.map((r) => r.path)] });
  const runtimeMs = run.startedAt && run.endedAt ? Date.parse(run.endedAt) - Date.parse(run.startedAt) : undefined;
  const envelope = renderEnvelope({
    label: run.label ?? run.agent ?? run.id,
    status: run.endReason ?? run.status,
    ...(run.killedBy ? { killedBy: run.killedBy } : {}),
    ...(run.partial ? { partial: true } : {}),
    ...(run.missingOutputs && run.missingOutputs.length > 0 ? { missingOutputs: run.missingOutputs } : {}),
    condensed,
    ...(keepErrors ? { errors: errorSection(run) } : {}),
    ...(runtimeMs !== undefined && Number.isFinite(runtimeMs) ? { runtimeMs } : {}),
    ...(run.stepsExecuted !== undefined ? { steps: run.stepsExecuted } : {}),
    ...(run.tokens !== undefined ? { tokens: run.tokens } : {}),
    ...(run.costUsd !== undefined ? { costUsd: run.costUsd } : {}),
    ...(run.modelLocal ? { costLocal: true } : {}),
    ...(run.changes && run.repo ? { changes: changesLine(run.id, run.repo, run.changes, refs) } : {}),
    ...(notesOf(run).length > 0 ? { notes: notesOf(run) } : {}),
    // The result value first, then /workspace/out, then stdio: what the footer keeps when cut.
    refs: [...refs].sort((a, b) => SOURCE_RANK[a.source] - SOURCE_RANK[b.source]),
    session: `${run.rootRunId}/${run.id}`,
  });
  const materialized = refs.reduce((s, r) => s + r.bytes, 0);
  return { envelope, condensed, savings: savingsFor(materialized, envelope.length) };
}
