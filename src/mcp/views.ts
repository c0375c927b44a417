/**
 * What the tools say about runs and refs: pure mappings from brig's records to the structured
 * content (and its schema) and the one-line text a model reads. Whitelisted fields only: a
 * record's host paths (resultDir) and previews stay out.
 */
import { z } from 'zod';
import { elapsedMs, type ResultRef, type RunRecord } from '../index.js';

/** The URI of a ref as an MCP resource (resources.ts serves it). */
export const refUri = (runId: string, ref: string): string => `brig://runs/${encodeURIComponent(runId)}/refs/${encodeURIComponent(ref)}`;

export const RefSummarySchema = z.object({
  ref: z.string().describe('the ResultRef id: pass it to ref_read / ref_grep / ref_jq / ref_sql / ref_jsonpath'),
  runId: z.string(),
  path: z.string().describe('relative to the run’s result directory (out/…, result.json, stdout.txt)'),
  source: z.string(),
  kind: z.string().describe('json | jsonl | csv | text | binary'),
  bytes: z.number(),
  lines: z.number(),
  rows: z.number().optional(),
  columns: z.array(z.string()).optional(),
  expiresAt: z.string(),
  uri: z.string().describe('the same ref as an MCP resource'),
});
export type RefSummary = z.infer<typeof RefSummarySchema>;

export function refSummary(r: ResultRef): RefSummary {
  return {
    ref: r.ref,
    runId: r.runId,
    path: r.path,
    source: r.source,
    kind: r.kind,
    bytes: r.bytes,
    lines: r.lines,
    ...(r.rows !== undefined ? { rows: r.rows } : {}),
    ...(r.columns !== undefined ? { columns: r.columns } : {}),
    expiresAt: r.expiresAt,
    uri: refUri(r.runId, r.ref),
  };
}

export const refLine = (r: RefSummary): string =>
  `${r.ref}  ${r.kind.padEnd(6)} ${String(r.bytes).padStart(10)} B  ${r.lines} lines${r.rows !== undefined ? `, ${r.rows} rows` : ''}  ${r.path}`;

export const SavingsSchema = z.object({
  materializedBytes: z.number(),
  charsReentered: z.number(),
  estSavedTokens: z.number().describe('tokens kept out of the coordinator’s context (estimated, chars / 4)'),
  savedRatio: z.number().optional(),
});

export const RunSummarySchema = z.object({
  runId: z.string(),
  kind: z.string().describe('command | script | agent'),
  label: z.string().nullable(),
  status: z.string().describe('queued | starting | running | materializing | ended'),
  endReason: z.string().nullable().describe('set once ended: completed | failed | killed | swept | watchdog_timeout | ghost_sweep'),
  killedBy: z.string().nullable(),
  depth: z.number(),
  rootRunId: z.string(),
  parentRunId: z.string().nullable(),
  steps: z.number(),
  elapsedMs: z.number(),
  createdAt: z.string(),
  progressLine: z.string().nullable().describe('the child’s last progress line'),
});
export type RunSummary = z.infer<typeof RunSummarySchema>;

export function runSummary(r: RunRecord, now: Date): RunSummary {
  return {
    runId: r.id,
    kind: r.kind,
    label: r.label,
    status: r.status,
    endReason: r.endReason,
    killedBy: r.killedBy,
    depth: r.depth,
    rootRunId: r.rootRunId,
    parentRunId: r.parentRunId,
    steps: r.stepsExecuted,
    elapsedMs: elapsedMs(r, now),
    createdAt: r.createdAt,
    progressLine: r.progressLine,
  };
}

export const RunStatusSchema = RunSummarySchema.extend({
  maxSteps: z.number(),
  startedAt: z.string().nullable(),
  endedAt: z.string().nullable(),
  exitCode: z.number().nullable(),
  runError: z.object({ code: z.string(), message: z.string() }).nullable().describe('why the run did not complete (its record’s error), if it did not'),
  tokens: z.number().nullable().describe('provider-reported tokens of an agent’s model calls (null: none made)'),
  costUsd: z.number().nullable().describe('null when unknown (a call had no price) or none made — never 0 by guess'),
  agentSpec: z.string().nullable(),
  model: z.string().nullable(),
  activeTool: z.string().nullable(),
  partial: z.boolean(),
  outputFiles: z.number(),
  outputBytes: z.number(),
  missingOutputs: z.array(z.string()),
  steeredTo: z.string().nullable(),
  resumable: z.boolean(),
});
export type RunStatusView = z.infer<typeof RunStatusSchema>;

export function runStatus(r: RunRecord, now: Date): RunStatusView {
  return {
    ...runSummary(r, now),
    maxSteps: r.maxSteps,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    exitCode: r.exitCode,
    runError: r.error ? { code: r.error.code, message: r.error.message } : null,
    tokens: r.tokens ?? null,
    costUsd: r.costUsd ?? null,
    agentSpec: r.agentSpec ?? null,
    model: r.model ?? null,
    activeTool: r.activeTool ?? null,
    partial: r.partial === true,
    outputFiles: r.outputFiles,
    outputBytes: r.outputBytes,
    missingOutputs: r.missingOutputs,
    steeredTo: r.steeredTo,
    resumable: r.resumable,
  };
}

const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** One line: id, where it is (or how it ended), steps, elapsed, its progress. */
export function runLine(s: RunSummary): string {
  const where = s.status === 'ended' ? `ended ${s.endReason}${s.killedBy ? ` (by ${s.killedBy})` : ''}` : s.status;
  return `${s.runId}  ${s.kind}${s.label ? ` [${flat(s.label)}]` : ''}  ${where}  steps ${s.steps}  ${secs(s.elapsedMs)}${s.progressLine ? `  “${flat(s.progressLine)}”` : ''}`;
}

/** A child's short text on one line of ours: no newline or control character can start a line that looks like brig's. */
function flat(s: string): string {
  return s.replace(/[\x00-\x1f\x7f-\x9f]+/g, ' ');
}

export function statusText(s: RunStatusView): string {
  const lines = [runLine(s)];
  if (s.runError) lines.push(`error [${s.runError.code}]: ${s.runError.message}`);
  if (s.exitCode !== null) lines.push(`exit code ${s.exitCode}`);
  if (s.tokens !== null) lines.push(`tokens ${s.tokens}, cost ${s.costUsd === null ? 'unknown' : `$${s.costUsd.toFixed(4)}`}`);
  if (s.status === 'ended') lines.push(`outputs: ${s.outputFiles} files, ${s.outputBytes} B${s.partial ? ' (partial: killed or timed out)' : ''}${s.missingOutputs.length ? `; missing: ${s.missingOutputs.join(', ')}` : ''}`);
  if (s.steeredTo) lines.push(`steered to ${s.steeredTo}`);
  lines.push(s.status === 'ended' ? 'Call `result` for its envelope, `ref_list` for its refs.' : 'Call `wait` for it to end.');
  return lines.join('\n');
}
