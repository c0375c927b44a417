import { endHue, paint } from './colour.js';
import { PREVIEW_BYTES, byCodeUnits, elapsedMs, resumeHint, type Brig, type ResultRef, type RunRecord } from '../light.js';

/** How the CLI shows a run: one JSON shape for --json, one line (or a block) for people. */

/** Oldest first by `createdAt`, compared as code units (protocol's byCodeUnits: never localeCompare's collator). */
export function byCreatedAt(a: Pick<RunRecord, 'createdAt'>, b: Pick<RunRecord, 'createdAt'>): number {
  return byCodeUnits(a.createdAt, b.createdAt);
}

/** The record's fields --json shows at the top level; `run` carries the rest, so nothing big is said twice. */
const PROMOTED = ['id', 'status', 'endReason', 'killedBy', 'exitCode', 'oomKilled', 'stdoutTail', 'stderrTail', 'outputs', 'resultDir', 'outputBytes', 'skipped', 'result', 'missingOutputs', 'resumable', 'error'] as const;

/** A ref as --json lists it beside a run: its handle and size, no preview. */
export type RefLine = Pick<ResultRef, 'ref' | 'path' | 'kind' | 'bytes' | 'lines'>;

/** The refs of a run for --json (none before its outputs are collected, or when they cannot be read). */
export async function refLines(brig: Pick<Brig, 'refs'>, r: RunRecord): Promise<RefLine[]> {
  if (!r.resultDir) return [];
  try {
    const refs = await brig.refs.list(r.id);
    return refs.ok ? refs.value.map((x) => ({ ref: x.ref, path: x.path, kind: x.kind, bytes: x.bytes, lines: x.lines })) : [];
  } catch {
    return [];
  }
}

/**
 * One run for --json (spawn, wait, resume). The issue-2 envelope (runId, exitCode, endReason,
 * stdoutTail, stderrTail, outputs, outputDir) at the top, the result once, the refs, and
 * `run`: the rest of the record. `files`/`resultDir` are the older names of
 * `outputs`/`outputDir` (small: paths and sizes) and stay for the callers that read them.
 */
export function runJson(r: RunRecord, refs: readonly RefLine[] = []): Record<string, unknown> {
  const rest: Record<string, unknown> = { ...r };
  for (const k of PROMOTED) delete rest[k];
  const outputs = r.outputs.map((o) => ({ path: o.path, bytes: o.bytes }));
  return {
    runId: r.id,
    status: r.status,
    endReason: r.endReason,
    killedBy: r.killedBy,
    exitCode: r.exitCode,
    oomKilled: r.oomKilled === true,
    stdoutTail: r.stdoutTail,
    stderrTail: r.stderrTail,
    stdoutPreview: r.stdoutTail.slice(-PREVIEW_BYTES),
    outputs,
    files: outputs,
    outputDir: r.resultDir,
    resultDir: r.resultDir,
    outputBytes: r.outputBytes,
    skipped: r.skipped,
    refs: [...refs],
    result: r.result,
    missingOutputs: r.missingOutputs,
    resumable: r.resumable,
    error: r.error,
    run: rest,
  };
}

/** runJson with the run's refs, read through the brig's drill-in surface. */
export async function runJsonOf(brig: Pick<Brig, 'refs'>, r: RunRecord): Promise<Record<string, unknown>> {
  return runJson(r, await refLines(brig, r));
}

export function fmtMs(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = Math.round(ms / 100) / 10;
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${Math.round(s % 60)}s`;
}

/** Control characters (terminal escapes) shown escaped, cut to `max` chars. */
export function oneLine(text: string, max: number): string {
  const flat = termText(text.replace(/[\n\t]/g, ' '));
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * A child's text as it may reach an operator's terminal: newlines and tabs kept, every other
 * control character — ESC, CR, BEL, C1 (CSI U+009B…) — shown as `\xNN`, so a label, an
 * envelope or a stdio tail cannot move the cursor, retitle the window or write the clipboard.
 */
export function termText(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function runLine(r: RunRecord, now = new Date()): string {
  const end = r.endReason ? `${r.endReason}${r.killedBy ? `(${r.killedBy})` : ''}` : '';
  return [
    r.id.padEnd(19),
    r.status.padEnd(13),
    end.padEnd(24),
    `d${r.depth}`,
    `steps ${r.stepsExecuted}`.padEnd(9),
    fmtMs(elapsedMs(r, now)).padEnd(7),
    r.parentRunId ? `parent ${r.parentRunId}` : '',
    r.label ? `[${oneLine(r.label, 80)}]` : '',
    // The child's own line (bounded to 200 chars on the record), for live runs: one line, no escapes.
    r.status !== 'ended' && r.progressLine ? `“${oneLine(r.progressLine, 60)}”` : '',
    r.partial ? '(partial)' : '',
  ]
    .filter((x) => x !== '')
    .join('  ')
    .trimEnd();
}

/** `brig list` on a terminal: a header row, then one row per run, columns sized to their cells; with `colour`, the END cell red for a failure, green for a completion. */
export function runTable(runs: RunRecord[], now = new Date(), colour = false): string {
  const head = ['RUN', 'STATUS', 'END', 'DEPTH', 'STEPS', 'ELAPSED', 'DETAILS'];
  const rows = runs.map((r) => [
    r.id,
    r.status,
    r.endReason ? `${r.endReason}${r.killedBy ? `(${r.killedBy})` : ''}` : '-',
    String(r.depth),
    String(r.stepsExecuted),
    fmtMs(elapsedMs(r, now)),
    [
      r.parentRunId ? `parent ${r.parentRunId}` : '',
      r.label ? `[${oneLine(r.label, 80)}]` : '',
      r.status !== 'ended' && r.progressLine ? `“${oneLine(r.progressLine, 60)}”` : '',
      r.partial ? '(partial)' : '',
    ]
      .filter((x) => x !== '')
      .join('  '),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const cell = (c: string, i: number, at: number) => {
    const padded = c.padEnd(widths[i]!);
    const hue = i === 2 && at > 0 ? endHue(runs[at - 1]!.endReason) : undefined;
    return hue ? paint(colour, hue, padded) : padded;
  };
  return [head, ...rows].map((row, at) => row.map((c, i) => cell(c, i, at)).join('  ').trimEnd() + '\n').join('');
}

/** The one line a live synchronous spawn redraws on a terminal: status, steps, elapsed, progress. */
export function liveLine(r: RunRecord, now = new Date()): string {
  return [
    r.status,
    `steps ${r.stepsExecuted}/${r.maxSteps}`,
    fmtMs(elapsedMs(r, now)),
    r.progressLine ? `“${oneLine(r.progressLine, 80)}”` : '',
  ]
    .filter((x) => x !== '')
    .join('  ');
}

export function runBlock(r: RunRecord): string {
  const lines = [`run ${r.id} ${r.endReason ?? r.status}${r.killedBy ? ` by ${r.killedBy}` : ''} (exit ${r.exitCode ?? '-'})`];
  if (r.resultDir) lines.push(`output: ${r.outputFiles} files, ${r.outputBytes} bytes in ${r.resultDir}`);
  if (r.missingOutputs.length) lines.push(`missing expected outputs: ${r.missingOutputs.join(', ')}`);
  if (r.result !== null && r.result !== undefined) lines.push(`result: ${JSON.stringify(r.result).slice(0, 2000)}`);
  if (r.error) lines.push(`error: ${termText(r.error.message)} [${r.error.code}]`);
  if (r.resumable) lines.push(`resumable: \`brig resume ${r.id}\``);
  const hint = resumeHint(r);
  if (hint) lines.push(hint);
  const out = r.stdoutTail.slice(-PREVIEW_BYTES);
  if (out) lines.push(`--- stdout (last ${PREVIEW_BYTES} bytes at most)`, termText(out.replace(/\n$/, '')));
  if (r.endReason !== 'completed' && r.stderrTail) lines.push('--- stderr', termText(r.stderrTail.slice(-PREVIEW_BYTES).replace(/\n$/, '')));
  return lines.join('\n') + '\n';
}
