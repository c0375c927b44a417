/**
 * Waiting for runs and reading what they gave back: `wait` (the envelope of each run that
 * ended, the status of the rest, progress while waiting), `result` (one run's envelope) and
 * `explain` (its lease decisions, refs and savings). The envelope is the bounded summary plus
 * ResultRef handles the coordinator is meant to receive (INV-3); the bytes stay on disk.
 */
import { z } from 'zod';
import { MAX_ENVELOPE_REFS, renderExplain, type Brig, type RunRecord, type RunResult } from '../index.js';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { explainRun, ExplainSchema } from './explain.js';
import { RunIdSchema } from './run-tools.js';
import { READ_ONLY, tool, type CallExtra, type ToolContext, type ToolDef } from './tool-def.js';
import { answer, outputShape, refusal, toolError, ToolErrorSchema } from './tool-result.js';
import { RefSummarySchema, SavingsSchema, refSummary, runLine, runSummary } from './views.js';

/** The MCP client gives up on a call after about 60 s: a wait answers well before. */
export const WAIT_MAX_MS = 50_000;

const EnvelopeFields = {
  envelope: z.string().describe('the bounded summary plus one line per ResultRef: what a coordinator receives'),
  condensationLevel: z.number(),
  refs: z.array(RefSummarySchema).describe(`the run's first ${MAX_ENVELOPE_REFS} refs (ref_list pages through all)`),
  refsTotal: z.number().optional().describe('refs the run has, when more than listed'),
};

/** As bounded as the envelope's own footer: its first MAX_ENVELOPE_REFS handles, and how many there are. */
const envelopeOf = (r: RunResult) => ({
  envelope: r.envelope,
  condensationLevel: r.condensed.level,
  refs: r.refs.slice(0, MAX_ENVELOPE_REFS).map(refSummary),
  ...(r.refs.length > MAX_ENVELOPE_REFS ? { refsTotal: r.refs.length } : {}),
});

const WaitEntrySchema = z.object({
  runId: z.string(),
  ended: z.boolean(),
  status: z.string(),
  endReason: z.string().nullable(),
  killedBy: z.string().nullable(),
  steps: z.number(),
  elapsedMs: z.number(),
  progressLine: z.string().nullable(),
  ...z.object(EnvelopeFields).partial().shape,
  envelopeError: ToolErrorSchema.optional().describe('the run ended but its envelope could not be cast'),
});

/** Each id once, in the order given; the unknown ones named together. */
async function knownRuns(brig: Brig, ids: string[]): Promise<Result<string[]>> {
  const unique = [...new Set(ids)];
  const found = await Promise.all(unique.map((id) => brig.get(id)));
  const unknown = unique.filter((_, i) => found[i] === undefined);
  if (unknown.length > 0) return err(new BrigError('run_not_found', `no run ${unknown.join(', ')}`, { data: { unknown } }));
  return ok(unique);
}

/** Every progressEveryMs, when the client gave a progress token: how long so far, and where each run is. */
function reportProgress(ctx: ToolContext, extra: CallExtra, ids: string[], timeoutMs: number): () => void {
  const token = extra._meta?.progressToken;
  if (token === undefined) return () => {};
  const started = ctx.now().getTime();
  const tick = ctx.timers.setInterval(() => {
    void (async () => {
      const recs = await Promise.all(ids.map((id) => ctx.brig.get(id)));
      const ended = recs.filter((r) => r?.status === 'ended').length;
      const going = recs.filter((r): r is RunRecord => r !== undefined && r.status !== 'ended').slice(0, 3);
      const where = going.map((r) => `${r.id} ${r.status}, step ${r.stepsExecuted}${r.progressLine ? `: ${r.progressLine.slice(0, 80)}` : ''}`).join('; ');
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: ctx.now().getTime() - started, total: timeoutMs, message: `${ended}/${ids.length} ended${where ? `; ${where}` : ''}` },
      });
    })().catch(() => {});
  }, ctx.progressEveryMs);
  return () => ctx.timers.clearInterval(tick);
}

const wait = tool({
  name: 'wait',
  title: 'Wait for runs',
  description:
    'Use after spawn to wait (up to timeoutMs, at most 50 s per call) for runs to end: each run that ended comes back with its envelope — a bounded summary plus ResultRef handles to drill into with ref_* — and its end reason; the others with their status, so call wait again for them.',
  annotations: READ_ONLY,
  input: z.strictObject({
    runIds: z.array(RunIdSchema).min(1).max(50),
    timeoutMs: z.number().int().min(0).max(WAIT_MAX_MS).default(30_000).describe('stop waiting after this long (the runs go on)'),
  }),
  output: outputShape({ runs: z.array(WaitEntrySchema), timedOut: z.boolean().describe('true when some run had not ended when the wait gave up') }),
  async run({ runIds, timeoutMs }, ctx, extra) {
    const ids = await knownRuns(ctx.brig, runIds);
    if (!ids.ok) return refusal(ids.error);
    const stop = reportProgress(ctx, extra, ids.value, timeoutMs);
    let recs: Result<RunRecord>[];
    try {
      // At least 1 ms: over the daemon's API a timeout of 0 would mean no timeout at all.
      recs = await Promise.all(ids.value.map((id) => ctx.brig.wait(id, { timeoutMs: Math.max(1, timeoutMs), signal: extra.signal })));
    } finally {
      stop();
    }
    const failed = recs.find((r) => !r.ok);
    if (failed && !failed.ok) return refusal(failed.error);
    const t = ctx.now();
    const runs = await Promise.all(
      recs.map(async (r) => {
        const rec = (r as { value: RunRecord }).value;
        const s = runSummary(rec, t);
        const base = { runId: s.runId, ended: rec.status === 'ended', status: s.status, endReason: s.endReason, killedBy: s.killedBy, steps: s.steps, elapsedMs: s.elapsedMs, progressLine: s.progressLine };
        if (rec.status !== 'ended') return { entry: base, text: runLine(s) };
        const env = await ctx.brig.refs.result(rec.id);
        if (!env.ok) return { entry: { ...base, envelopeError: toolError(env.error) }, text: `${runLine(s)}\n(no envelope: ${env.error.code}: ${env.error.message})` };
        return { entry: { ...base, ...envelopeOf(env.value) }, text: `== ${runLine(s)}\n${env.value.envelope.trimEnd()}` };
      }),
    );
    const going = runs.filter((r) => !r.entry.ended).length;
    const tail = going > 0 ? `\n… ${going} not ended after ${timeoutMs / 1000} s (they go on): call wait again, or status / kill.` : '';
    return answer({ runs: runs.map((r) => r.entry), timedOut: going > 0 }, `${runs.map((r) => r.text).join('\n\n')}${tail}`);
  },
});

const result = tool({
  name: 'result',
  title: 'Envelope of an ended run',
  description:
    'Use to get again the envelope of a run that ended — its bounded summary, metrics and one line per ResultRef (the same one wait gave) — before drilling into a ref with ref_read / ref_grep / ref_jq / ref_sql / ref_jsonpath.',
  annotations: READ_ONLY,
  input: z.strictObject({ runId: RunIdSchema }),
  output: outputShape({
    runId: z.string(),
    ...EnvelopeFields,
    originalTokens: z.number().describe('estimated tokens of the full result'),
    ratio: z.number().describe('condensed / original tokens'),
    savings: SavingsSchema,
  }),
  async run({ runId }, { brig }) {
    const r = await brig.refs.result(runId);
    if (!r.ok) return refusal(r.error);
    const v = r.value;
    return answer({ runId, ...envelopeOf(v), originalTokens: v.condensed.originalTokens, ratio: v.condensed.ratio, savings: v.savings }, v.envelope);
  },
});

const explain = tool({
  name: 'explain',
  title: 'Explain a run',
  description:
    'Use to see why a run could or could not do something and what it cost your context: its lease decisions (capabilities granted and refused), its ResultRefs, and its estimated tokens saved (rolled up over the tree for a root run).',
  annotations: READ_ONLY,
  input: z.strictObject({ runId: RunIdSchema }),
  output: outputShape(ExplainSchema.shape),
  async run({ runId }, ctx) {
    const x = await explainRun(ctx, runId);
    if (!x.ok) return refusal(x.error);
    return answer(x.value.structured, renderExplain(x.value.input));
  },
});

export const RESULT_TOOLS: ToolDef[] = [wait, result, explain];
