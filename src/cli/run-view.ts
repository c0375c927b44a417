import { brigPaths, loadConfig } from '../config/index.js';
import { FsResultStore } from '../results/index.js';
import { elapsedMs, type RunRecord } from '../runs/index.js';
import type { CliIO } from './command.js';

/** How the CLI shows a run: one JSON shape for --json, one line (or a block) for people. */

export const PREVIEW_BYTES = 2048;

export async function runJson(io: CliIO, r: RunRecord): Promise<Record<string, unknown>> {
  let refs: { ref: string; path: string; kind: string; bytes: number; lines: number }[] = [];
  if (r.resultDir) {
    try {
      const store = new FsResultStore({ dir: brigPaths(loadConfig(io.env).home).results });
      refs = (await store.list(r.id)).map((x) => ({ ref: x.ref, path: x.path, kind: x.kind, bytes: x.bytes, lines: x.lines }));
    } catch {
      refs = [];
    }
  }
  return {
    // The issue-2 spawn envelope: runId, exitCode, endReason, stdoutTail, stderrTail, outputs, outputDir.
    runId: r.id,
    exitCode: r.exitCode,
    endReason: r.endReason,
    stdoutTail: r.stdoutTail,
    stderrTail: r.stderrTail,
    outputs: r.outputs.map((o) => ({ path: o.path, bytes: o.bytes })),
    outputDir: r.resultDir,
    status: r.status,
    killedBy: r.killedBy,
    oomKilled: r.error?.message.includes('out of memory') ?? false,
    resultDir: r.resultDir,
    files: r.outputs,
    outputBytes: r.outputBytes,
    skipped: r.skipped,
    refs,
    stdoutBytes: Buffer.byteLength(r.stdoutTail),
    stdoutPreview: r.stdoutTail.slice(-PREVIEW_BYTES),
    stderrPreview: r.stderrTail.slice(-PREVIEW_BYTES),
    result: r.result,
    missingOutputs: r.missingOutputs,
    resumable: r.resumable,
    error: r.error,
    run: r,
  };
}

export function fmtMs(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const s = Math.round(ms / 100) / 10;
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${Math.round(s % 60)}s`;
}

/** Control characters (terminal escapes) shown escaped, cut to `max` chars. */
function oneLine(text: string, max: number): string {
  const flat = text.replace(/[\x00-\x1f\x7f]/g, (c) => (c === '\n' || c === '\t' ? ' ' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`));
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
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
    r.label ? `[${r.label}]` : '',
    // The child's own line (bounded to 200 chars on the record), for live runs: one line, no escapes.
    r.status !== 'ended' && r.progressLine ? `“${oneLine(r.progressLine, 60)}”` : '',
    r.partial ? '(partial)' : '',
  ]
    .filter((x) => x !== '')
    .join('  ')
    .trimEnd();
}

export function runBlock(r: RunRecord): string {
  const lines = [`run ${r.id} ${r.endReason ?? r.status}${r.killedBy ? ` by ${r.killedBy}` : ''} (exit ${r.exitCode ?? '-'})`];
  if (r.resultDir) lines.push(`output: ${r.outputFiles} files, ${r.outputBytes} bytes in ${r.resultDir}`);
  if (r.missingOutputs.length) lines.push(`missing expected outputs: ${r.missingOutputs.join(', ')}`);
  if (r.result !== null && r.result !== undefined) lines.push(`result: ${JSON.stringify(r.result).slice(0, 2000)}`);
  if (r.error) lines.push(`error: ${r.error.message} [${r.error.code}]`);
  if (r.resumable) lines.push(`resumable: \`brig resume ${r.id}\``);
  const out = r.stdoutTail.slice(-PREVIEW_BYTES);
  if (out) lines.push(`--- stdout (last ${PREVIEW_BYTES} bytes at most)`, out.replace(/\n$/, ''));
  if (r.endReason !== 'completed' && r.stderrTail) lines.push('--- stderr', r.stderrTail.slice(-PREVIEW_BYTES).replace(/\n$/, ''));
  return lines.join('\n') + '\n';
}
