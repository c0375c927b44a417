/**
 * From a finished run to what its coordinator receives: condense the result, cast the
 * envelope, and estimate the savings. Structural input (results/ does not import runs/):
 * any run record with these fields works.
 */
import { type CondenseOptions, type Condensed, condense } from './condense.js';
import { renderEnvelope } from './narrative.js';
import { type Savings, savingsFor } from './savings.js';
import type { ResultRef, RunEnvelope } from '../protocol/index.js';

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
  error?: { code?: string; message?: string } | null;
  tokens?: number;
  costUsd?: number | null;
  /** Its model was brig's own local provider. */
  modelLocal?: boolean;
}

export type { RunEnvelope } from '../protocol/index.js';

/** An agent child's result is `{answer, files?, partial?, endReason?}`: its text is the answer. */
function agentAnswer(result: unknown): string | undefined {
  if (!result || typeof result !== 'object' || typeof (result as { answer?: unknown }).answer !== 'string') return undefined;
  const r = result as { answer: string; files?: unknown; partial?: unknown; endReason?: unknown };
  const files = Array.isArray(r.files) && r.files.length > 0 ? `\nFiles: ${r.files.filter((f) => typeof f === 'string').join(', ')}` : '';
  const cut = r.partial === true ? `\n(The agent did not finish${typeof r.endReason === 'string' ? `: ${r.endReason}` : ''}; this is its salvage report.)` : '';
  return `${r.answer}${files}${cut}`;
}

/** The text that condensation works on: the result value, else stdout, plus the error if any. */
export function resultText(run: EnvelopeRun): string {
  const agent = agentAnswer(run.result);
  const value = agent !== undefined
    ? agent
    : typeof run.result === 'string'
      ? run.result
      : run.result !== undefined && run.result !== null
        ? JSON.stringify(run.result, null, 2)
        : run.resultSpooled
          ? `(the result is ${run.resultSpooled} bytes of JSON: the result.json ResultRef holds it whole; slice it)\n${run.stdoutTail ?? ''}`
          : (run.stdoutTail ?? '');
  const error = run.error ? `\nError${run.error.code ? ` [${run.error.code}]` : ''}: ${run.error.message ?? ''}` : '';
  return `${value}${error}`.trim();
}

const SOURCE_RANK: Record<ResultRef['source'], number> = { value: 0, out: 1, transcript: 2, stdout: 3, stderr: 4 };

export async function buildRunEnvelope(run: EnvelopeRun, refs: readonly ResultRef[], opts: CondenseOptions = {}): Promise<RunEnvelope> {
  const condensed = await condense(resultText(run), { ...opts, knownPaths: [...(opts.knownPaths ?? []), ...refs.map((r) => r.path)] });
  const runtimeMs = run.startedAt && run.endedAt ? Date.parse(run.endedAt) - Date.parse(run.startedAt) : undefined;
  const envelope = renderEnvelope({
    label: run.label ?? run.agent ?? run.id,
    status: run.endReason ?? run.status,
    ...(run.killedBy ? { killedBy: run.killedBy } : {}),
    ...(run.partial ? { partial: true } : {}),
    condensed,
    ...(runtimeMs !== undefined && Number.isFinite(runtimeMs) ? { runtimeMs } : {}),
    ...(run.stepsExecuted !== undefined ? { steps: run.stepsExecuted } : {}),
    ...(run.tokens !== undefined ? { tokens: run.tokens } : {}),
    ...(run.costUsd !== undefined ? { costUsd: run.costUsd } : {}),
    ...(run.modelLocal ? { costLocal: true } : {}),
    // The result value first, then /workspace/out, then stdio: what the footer keeps when cut.
    refs: [...refs].sort((a, b) => SOURCE_RANK[a.source] - SOURCE_RANK[b.source]),
    session: `${run.rootRunId}/${run.id}`,
  });
  const materialized = refs.reduce((s, r) => s + r.bytes, 0);
  return { envelope, condensed, savings: savingsFor(materialized, envelope.length) };
}
