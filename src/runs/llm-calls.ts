/**
 * Model calls of a run, served by the supervisor: the child appends to a conversation the
 * supervisor holds, and asks for the next assistant turn (docs/agents.md).
 *
 * Guarantees: the provider key never leaves the model port (the child sends messages, gets
 * a message back); every call is metered — tokens always, cost when the model has a price —
 * and refused `budget_exceeded` once the run's or its whole tree's lease budget is spent;
 * the tools a call offers must be the ones the lease allows this run (its packet's surface);
 * the conversation is bounded; every message and reply lands in the run's transcript
 * (runs/<id>/transcript.jsonl, materialized as a ResultRef) and only content-free counts in
 * the ledger (INV-7). Threat: a child (or the model driving it) trying to outspend its
 * budget, flood the supervisor's memory, or offer itself tools its lease does not grant.
 * Fails closed: a run with no model configured gets `model_unavailable`.
 */
import { promises as fs } from 'node:fs';
import { BrigError, publicError } from '../util/errors.js';
import { microCompact } from './micro-compact.js';
import { parentSummary } from './parent-summary.js';
import { modelCallLine, type ConversationMessage, type ModelPort, type ToolSchema } from './model-port.js';
import type { LlmService, RunTable } from './run-table.js';
import type { RunStore } from './run-store.js';
import type { LlmReply, ParamsOf, RunRecord } from './types.js';
import { messagesShape, recordedCalls, requestDifference, stampOf, type RecordedCall } from './replay-recording.js';

/** The most a conversation may hold (the child compacts well before). */
export const MAX_CONVERSATION_BYTES = 8 * 1024 * 1024;
/** The most one run's transcript may grow to on disk. */
export const MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024;
/** A salvage call's output cap. */
export const SALVAGE_MAX_TOKENS = 1024;

/** One reply of an agent's model, as `send` returns it (the text, bounded by the caller). */
export interface AgentReply {
  /** When the model call that produced it started (epoch ms). */
  startedAt: number;
  step: number;
  text: string;
  toolCalls: string[];
}

interface Conversation {
  messages: ConversationMessage[];
  bytes: number;
  transcriptBytes: number;
}

export interface LlmDeps {
  models: ModelPort | undefined;
  /** The tools each run offered on its last step (listed, not callable, on summary and salvage calls). */
  lastTools: Map<string, ToolSchema[]>;
  /** Re-readable tool results kept whole in what the provider is sent (the rest become placeholders). */
  microCompactKeep?: number;
  /** Told of every reply a run's model gave (sessions `send` waits on them). */
  onReply?: (runId: string, reply: AgentReply) => void;
  /** The tool names a run's packet offers (its lease's surface); undefined = not an agent. */
  surfaceOf: (runId: string) => Promise<readonly string[] | undefined>;
}

/** What one run's model calls share while it lives (llmService keeps it; it goes with the run). */
interface RunCalls {
  /** Aborted when the run ends: a call still waiting on the provider is cut off. */
  stop: AbortController;
  /** The run's latest call: the next one waits for it. */
  last: Promise<unknown>;
  /** Refusal codes ledgered already for this run (the broker counts every refusal; the fact is written once). */
  refused: Set<string>;
  /** A replay (`replayOf`): the source run's recorded calls, answered in order instead of the provider. */
  replay?: { calls: RecordedCall[]; next: number };
}

/**
 * A model call refused by the supervisor, as an audit fact: once per run and code (a child
 * asking again and again past its budget is counted by the broker's refusal lines, not written
 * as one ledger line per call).
 */
function refusedOnce(p: { table: RunTable }, calls: RunCalls, r: RunRecord, purpose: string, code: 'budget_exceeded' | 'capability_denied'): void {
  if (calls.refused.has(code)) return;
  calls.refused.add(code);
  p.table.ledger.append({ type: 'run.model_refused', runId: r.id, rootRunId: r.rootRunId, purpose, code, tokens: r.tokens ?? 0 });
}

const size = (m: unknown) => Buffer.byteLength(JSON.stringify(m));

/** The conversation a transcript holds now: the last reset, and what was appended and replied since. */
export function conversationOf(transcript: string): ConversationMessage[] {
  let messages: ConversationMessage[] = [];
  for (const line of transcript.split('\n')) {
    if (!line) continue;
    try {
      const ev = JSON.parse(line) as { t: string; messages?: ConversationMessage[]; message?: ConversationMessage };
      if (ev.t === 'reset') messages = [];
      for (const m of ev.t === 'reply' && ev.message ? [ev.message] : (ev.messages ?? [])) messages.push(m);
    } catch {
      // a torn last line (a crash mid-write) is dropped
    }
  }
  return messages;
}

/** The conversations of this supervisor's runs, rebuilt from a transcript after a restart. */
export class Conversations {
  readonly #byRun = new Map<string, Conversation>();

  constructor(private readonly store: Pick<RunStore, 'file' | 'append'>) {}

  transcriptFile(runId: string): string {
    return this.store.file(runId, 'transcript');
  }

  async #get(runId: string): Promise<Conversation> {
    const have = this.#byRun.get(runId);
    if (have) return have;
    const text = await fs.readFile(this.transcriptFile(runId), 'utf8').catch(() => '');
    const c: Conversation = { messages: conversationOf(text), bytes: 0, transcriptBytes: Buffer.byteLength(text) };
    c.bytes = c.messages.reduce((n, m) => n + size(m), 0);
    this.#byRun.set(runId, c);
    return c;
  }

  async #log(runId: string, c: Conversation, ev: Record<string, unknown>): Promise<void> {
    const line = JSON.stringify({ at: new Date().toISOString(), ...ev }) + '\n';
    const n = Buffer.byteLength(line);
    if (c.transcriptBytes + n > MAX_TRANSCRIPT_BYTES) {
      throw new BrigError('ref_too_large', `the transcript would pass ${MAX_TRANSCRIPT_BYTES} bytes`, { hint: 'Compact (llm.reset) and keep tool results small.' });
    }
    // On a full home the line is held in order and appended when space returns (run-store.ts): the call goes on.
    await this.store.append(runId, 'transcript', line);
    c.transcriptBytes += n;
  }

  /** The messages' size; throws `ref_too_large` when they would take the conversation past its bound. */
  async fits(runId: string, messages: readonly ConversationMessage[]): Promise<number> {
    const c = await this.#get(runId);
    const add = messages.reduce((n, m) => n + size(m), 0);
    if (c.bytes + add > MAX_CONVERSATION_BYTES) {
      throw new BrigError('ref_too_large', `the conversation would pass ${MAX_CONVERSATION_BYTES} bytes`, { hint: 'Compact it: summarize older turns and llm.reset.', data: { limit: MAX_CONVERSATION_BYTES, current: c.bytes } });
    }
    return add;
  }

  async append(runId: string, messages: ConversationMessage[]): Promise<number> {
    const add = await this.fits(runId, messages);
    const c = await this.#get(runId);
    await this.#log(runId, c, { t: 'append', messages });
    c.messages.push(...messages);
    c.bytes += add;
    return c.messages.length;
  }

  async reset(runId: string, messages: ConversationMessage[]): Promise<number> {
    const c = await this.#get(runId);
    const bytes = messages.reduce((n, m) => n + size(m), 0);
    if (bytes > MAX_CONVERSATION_BYTES) throw new BrigError('ref_too_large', `a reset of ${bytes} bytes is over ${MAX_CONVERSATION_BYTES}`);
    await this.#log(runId, c, { t: 'reset', messages });
    c.messages = [...messages];
    c.bytes = bytes;
    return c.messages.length;
  }

  async messages(runId: string): Promise<ConversationMessage[]> {
    return [...(await this.#get(runId)).messages];
  }

  async reply(runId: string, message: ConversationMessage, meta: Record<string, unknown>): Promise<void> {
    const c = await this.#get(runId);
    await this.#log(runId, c, { t: 'reply', message, ...meta });
    c.messages.push(message);
    c.bytes += size(message);
  }

  forget(runId: string): void {
    this.#byRun.delete(runId);
  }
}

interface Spend {
  tokens: number;
  costUsd: number;
  costKnown: boolean;
}

function spendOf(runs: readonly RunRecord[]): Spend {
  let tokens = 0;
  let costUsd = 0;
  let costKnown = true;
  for (const r of runs) {
    tokens += r.tokens ?? 0;
    if (r.costUsd === null) costKnown = false;
    else costUsd += r.costUsd ?? 0;
  }
  return { tokens, costUsd, costKnown };
}

/** What is left of a budget (0 in the lease means none at all). */
function left(limit: number | undefined, spent: number): number | null {
  return limit === undefined ? null : Math.max(0, limit - spent);
}

/**
 * The budgets that bind this call: the run's own lease, and its root run's lease over the
 * whole tree (a fan-out cannot outspend the tree by spreading over many children).
 */
function budgetCheck(p: { table: RunTable }, r: RunRecord): { tokensLeft: number | null; costLeftUsd: number | null } {
  const tree = p.table.all().filter((x) => x.rootRunId === r.rootRunId);
  const root = p.table.get(r.rootRunId);
  const mine = spendOf([r]);
  const all = spendOf(tree);
  const tokensLeft = [left(r.budget?.tokens, mine.tokens), left(root?.budget?.tokens, all.tokens)].filter((x): x is number => x !== null);
  const costLeft = [left(r.budget?.costUsd, mine.costUsd), left(root?.budget?.costUsd, all.costUsd)].filter((x): x is number => x !== null);
  const t = tokensLeft.length ? Math.min(...tokensLeft) : null;
  const c = costLeft.length ? Math.min(...costLeft) : null;
  if (t !== null && t <= 0) {
    throw new BrigError('budget_exceeded', `the token budget is spent (${mine.tokens} by this run, ${all.tokens} by its tree)`, { data: { limit: r.budget?.tokens ?? null, current: mine.tokens, tree: all.tokens } });
  }
  if (c !== null && c <= 0) {
    throw new BrigError('budget_exceeded', `the cost budget is spent ($${mine.costUsd.toFixed(4)} by this run, $${all.costUsd.toFixed(4)} by its tree)`, { data: { limit: r.budget?.costUsd ?? null, current: mine.costUsd } });
  }
  return { tokensLeft: t, costLeftUsd: c };
}

/** What is left of the budgets that bind a run's next call (0 once spent; null: no budget). */
export function budgetLeft(table: RunTable, r: RunRecord): { tokensLeft: number | null; costLeftUsd: number | null } {
  try {
    return budgetCheck({ table }, r);
  } catch {
    return { tokensLeft: 0, costLeftUsd: 0 };
  }
}

/**
 * What every model call checks first, a replayed one too: the step budget, and that the tools
 * it offers are the run's surface (a summary or salvage call offers none and lists the last
 * step's with tool choice `none`: Anthropic refuses tool blocks in a history without tools).
 */
async function callPreflight(d: LlmDeps, r: RunRecord, params: ParamsOf<'llm.complete'>): Promise<{ purpose: 'step' | 'compact' | 'salvage'; offered: ToolSchema[]; tools: ToolSchema[] }> {
  const purpose = params.purpose === 'compact' || params.purpose === 'salvage' ? params.purpose : 'step';
  if (purpose === 'step' && r.stepsExecuted >= r.maxSteps) {
    throw new BrigError('timeout', `max_steps ${r.maxSteps} spent`, { data: { limit: r.maxSteps, current: r.stepsExecuted } });
  }
  const offered: ToolSchema[] = params.tools ?? [];
  const tools = offered.length > 0 ? offered : (d.lastTools.get(r.id) ?? []);
  const surface = await d.surfaceOf(r.id);
  const outside = tools.map((t) => t.name).filter((n) => !(surface ?? []).includes(n));
  if (outside.length > 0) {
    throw new BrigError('capability_denied', `the lease does not offer ${outside.slice(0, 5).join(', ')} to this run`, { data: { what: outside.slice(0, 5).join(',') } });
  }
  if (offered.length > 0) d.lastTools.set(r.id, offered);
  return { purpose, offered, tools };
}

async function llmComplete(p: { table: RunTable }, d: LlmDeps, conv: Conversations, r: RunRecord, params: ParamsOf<'llm.complete'>, calls: RunCalls): Promise<LlmReply> {
  if (r.replayOf) return replayComplete(p, d, conv, r, params, calls);
  if (!d.models) throw new BrigError('model_unavailable', 'no model is configured for this supervisor', { hint: 'Set BRIG_MODEL_BASE_URL and BRIG_MODEL (or $BRIG_HOME/config.yaml) and restart `brig serve`.' });
  const { purpose, offered, tools } = await callPreflight(d, r, params);
  // Only a step may have the model call tools: a summary or a salvage that offered them gets
  // `none` (else a compact call would be an uncounted step past max_steps).
  const toolChoice = offered.length > 0 && purpose === 'step' ? 'auto' : 'none';
  let budget: ReturnType<typeof budgetCheck>;
  try {
    budget = budgetCheck(p, r);
  } catch (e) {
    // A refusal is an audit fact like any other (content-free): which run, which budget.
    refusedOnce(p, calls, r, purpose, 'budget_exceeded');
    throw e;
  }
  const info = d.models.resolve(r.model);
  if (!info.ok) throw info.error;
  // The model is the run's, fixed at spawn: a child may name it, never another.
  if (typeof params.model === 'string' && params.model !== info.value.alias) {
    refusedOnce(p, calls, r, purpose, 'capability_denied');
    throw new BrigError('capability_denied', `this run's model is fixed at spawn (${info.value.alias}); a child cannot call another`, { data: { what: 'model' } });
  }
  const system = params.system;
  // What the call carries (`append`) is part of what the model is asked, and lands only with its turn.
  const carried = (params.append ?? []) as ConversationMessage[];
  if (carried.length > 0) await conv.fits(r.id, carried);
  // Tier-0 micro-compaction: old re-readable tool results go as placeholders.
  const messages = microCompact([...(await conv.messages(r.id)), ...carried], d.microCompactKeep ?? 25);
  // What the provider will bill as input is known only after the call: a child that filled its
  // conversation must not spend a context window on one token of budget. Refused when even a
  // low estimate of it (characters / 4) is more than what is left.
  const inputEstimate = Math.ceil((system.length + messages.reduce((n, m) => n + m.content.length + ('toolCalls' in m && m.toolCalls ? JSON.stringify(m.toolCalls).length : 0), 0)) / 4);
  if (budget.tokensLeft !== null && inputEstimate > budget.tokensLeft) {
    refusedOnce(p, calls, r, purpose, 'budget_exceeded');
    throw new BrigError('budget_exceeded', `this call's input (about ${inputEstimate} tokens) is more than the token budget left (${budget.tokensLeft})`, { data: { limit: r.budget?.tokens ?? null, current: r.tokens ?? 0, estimate: inputEstimate } });
  }
  const asked = params.maxTokens ?? info.value.maxOutputTokens;
  const capped = Math.min(asked, info.value.maxOutputTokens, purpose === 'salvage' ? SALVAGE_MAX_TOKENS : Infinity, budget.tokensLeft ?? Infinity);
  const maxTokens = Math.max(1, capped);
  const started = Date.now();
  let turn;
  try {
    turn = await d.models.complete(info.value.alias, {
      system,
      messages,
      ...(tools.length ? { tools, toolChoice } : {}),
      maxTokens,
      cacheKey: r.rootRunId,
      signal: calls.stop.signal,
    });
  } catch (e) {
    const pe = publicError(e);
    p.table.ledger.append({ type: 'run.model_call', runId: r.id, rootRunId: r.rootRunId, purpose, model: info.value.alias, ok: false, code: pe.code, ms: Date.now() - started });
    throw new BrigError(pe.code === 'internal' ? 'model_unavailable' : pe.code, pe.message);
  }
  const step = typeof params.step === 'number' ? params.step : r.stepsExecuted;
  // What was sent, as a digest and a content-free shape: a replay compares its requests to it.
  const req = stampOf(system, messages, tools, info.value.contextWindow);
  if (carried.length > 0) await conv.append(r.id, carried);
  await conv.reply(r.id, turn.message, { purpose, step, usage: turn.usage, costUsd: turn.costUsd, model: turn.model, finishReason: turn.finishReason, req });
  d.onReply?.(r.id, { startedAt: started, step, text: turn.message.content, toolCalls: turn.message.toolCalls.map((c) => c.name) });
  const next = await p.table.update(r.id, (x) => ({
    ...x,
    tokens: (x.tokens ?? 0) + turn.usage.total,
    // An agent's step: one model call (and the tool calls it makes).
    stepsExecuted: purpose === 'step' ? x.stepsExecuted + 1 : x.stepsExecuted,
    costUsd: x.costUsd === null || turn.costUsd === null ? null : (x.costUsd ?? 0) + turn.costUsd,
    ...(turn.local ? { modelLocal: true } : {}),
    lastProgressAt: p.table.clock.now().toISOString(),
  }));
  // The request's digest rides the hash-chained ledger: the transcript's record of it can be checked.
  p.table.ledger.append({ ...modelCallLine(r, { purpose, step, alias: info.value.alias, turn, startedMs: started }), reqDigest: req.digest });
  const after = budgetLeft(p.table, next);
  return {
    message: turn.message,
    finishReason: turn.finishReason,
    usage: turn.usage,
    costUsd: turn.costUsd,
    model: turn.model,
    contextWindow: info.value.contextWindow,
    contextUsed: turn.usage.input + turn.usage.output,
    budget: after,
  };
}

/**
 * A replay's model call: answered from the source run's recorded reply at the same position,
 * never the provider (no network, no key). The request the replayed loop sends is compared to
 * the recorded one; the first that differs is the divergence, kept on the run record (content-
 * free). The lease checks hold as for any call: the tools offered must be the run's surface.
 */
async function replayComplete(p: { table: RunTable }, d: LlmDeps, conv: Conversations, r: RunRecord, params: ParamsOf<'llm.complete'>, calls: RunCalls): Promise<LlmReply> {
  const { purpose, tools } = await callPreflight(d, r, params);
  if (!calls.replay) {
    const text = (await p.table.store.read(r.replayOf!, 'transcript'))?.toString('utf8') ?? '';
    calls.replay = { calls: recordedCalls(text), next: 0 };
  }
  const rp = calls.replay;
  const carried = (params.append ?? []) as ConversationMessage[];
  if (carried.length > 0) await conv.fits(r.id, carried);
  const raw = [...(await conv.messages(r.id)), ...carried];
  const messages = microCompact(raw, d.microCompactKeep ?? 25);
  const rec = rp.calls[rp.next];
  const index = rp.next;
  rp.next += 1;
  const stamp = stampOf(params.system, messages, tools, rec?.stamp?.contextWindow ?? 0);
  const step = typeof params.step === 'number' ? params.step : r.stepsExecuted;
  const what = rec ? requestDifference(rec, purpose, stamp, messagesShape(raw)) : `the replayed loop made model call ${index + 1}; the recording holds ${rp.calls.length}`;
  await p.table.update(r.id, (x) => ({
    ...x,
    replay: {
      of: r.replayOf!,
      calls: index + 1,
      recorded: rp.calls.length,
      divergence: x.replay?.divergence ?? (what ? { step, call: index + 1, what: what.slice(0, 1000) } : null),
    },
  }));
  if (!rec) {
    throw new BrigError('model_unavailable', `replay of ${r.replayOf}: the recording has no reply for model call ${index + 1} (it holds ${rp.calls.length})`, { data: { recorded: rp.calls.length } });
  }
  const turn = rec.reply;
  if (carried.length > 0) await conv.append(r.id, carried);
  await conv.reply(r.id, turn.message, { purpose, step, usage: turn.usage, costUsd: 0, model: turn.model, finishReason: turn.finishReason, req: stamp, replayed: index + 1 });
  d.onReply?.(r.id, { startedAt: Date.now(), step, text: turn.message.content, toolCalls: turn.message.toolCalls.map((c) => c.name) });
  const next = await p.table.update(r.id, (x) => ({
    ...x,
    // The recorded usage counts against the lease as it did (the same budget ends the same way); nothing is spent.
    tokens: (x.tokens ?? 0) + turn.usage.total,
    stepsExecuted: purpose === 'step' ? x.stepsExecuted + 1 : x.stepsExecuted,
    costUsd: x.costUsd === null ? null : (x.costUsd ?? 0),
    lastProgressAt: p.table.clock.now().toISOString(),
  }));
  p.table.ledger.append({ type: 'run.model_call', runId: r.id, rootRunId: r.rootRunId, step, purpose, model: turn.model, ok: true, replayed: true, input: turn.usage.input, output: turn.usage.output, costUsd: 0, finishReason: turn.finishReason, toolCalls: turn.message.toolCalls.length, reqDigest: stamp.digest, ms: 0 });
  return {
    message: turn.message,
    finishReason: turn.finishReason,
    usage: turn.usage,
    costUsd: 0,
    model: turn.model,
    contextWindow: rec.stamp?.contextWindow ?? 0,
    contextUsed: turn.usage.input + turn.usage.output,
    budget: budgetLeft(p.table, next),
  };
}

/** The service child calls reach: the conversation store and the metered completion. */
export function llmService(table: RunTable, deps: LlmDeps): LlmService {
  const conv = new Conversations(table.store);
  // What is held per run in memory goes with its end (the transcript stays on disk).
  const seen = new Map<string, RunCalls>();
  const track = (runId: string) => {
    const known = seen.get(runId);
    if (known) return known;
    const s: RunCalls = { stop: new AbortController(), last: Promise.resolve(), refused: new Set() };
    seen.set(runId, s);
    table.onEnded(runId, () => {
      // A call still waiting on the provider when its run ended is cut off: nothing is spent for a run that is gone.
      s.stop.abort();
      seen.delete(runId);
      conv.forget(runId);
      deps.lastTools.delete(runId);
    });
    return s;
  };
  return {
    append: (runId, messages) => (track(runId), conv.append(runId, messages as ConversationMessage[])),
    reset: (runId, messages) => (track(runId), conv.reset(runId, messages as ConversationMessage[])),
    // One model call at a time per run, each checked against the record as the one before left
    // it: calls sent side by side cannot all pass the step and budget checks before any is charged.
    complete: (run, params) => {
      const s = track(run.id);
      const mine = s.last
        .catch(() => undefined)
        .then(() => {
          if (s.stop.signal.aborted) throw new BrigError('not_running', `run ${run.id} has ended`);
          return llmComplete({ table }, deps, conv, table.get(run.id) ?? run, params, s);
        });
      s.last = mine;
      return mine;
    },
    // The parent's summary for a child it spawns (parent-summary.ts): in line with its own calls.
    summarize: (run, maxTokens) => {
      const s = track(run.id);
      const mine = s.last
        .catch(() => undefined)
        .then(async () => parentSummary({ table, models: deps.models, budgetLeft: (r) => budgetCheck({ table }, r) }, table.get(run.id) ?? run, await conv.messages(run.id), maxTokens));
      s.last = mine;
      return mine;
    },
  };
}
