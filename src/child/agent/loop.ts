/**
 * The agent loop that runs inside the jail (docs/agents.md, "The loop"). The supervisor
 * holds the conversation; the loop appends to it, asks for the next assistant turn and keeps
 * a mirror of its own, to choose what survives a compaction and to have words to salvage.
 * Each step: steers → compaction when near the window → one model call → the tool calls,
 * one result each → append → progress. The clean end is `finish`; every other end gets one
 * bounded salvage and a partial result, so the parent always learns something.
 */
import { batches, fitMessage, headTail, MAX_BATCH_JSON_BYTES, MAX_BATCH_MESSAGES, Spiller } from './bound.js';
import { executeCall, notRun, type CallEnv } from './calls.js';
import { chooseKept, COMPACT_REQUEST, resetMessages } from './compact.js';
import { JAIL_ROOTS, type Roots } from './confine.js';
import { bounded, completeOnce } from './model-call.js';
import type { LoopPacket } from './packet.js';
import { buildSystemPrompt } from './prompt.js';
import { offeredTools, toolSchemas } from './tools/registry.js';
import type { ChildInfo, ToolDef } from './tools/tool.js';
import { errorCode, type Broker, type EndReason, type LlmMessage, type LlmReply, type LlmTool } from './types.js';
import { gatherWorkspaceInfo } from './workspace-info.js';
import { MAX_LINE_BYTES } from '../broker-client.js';
import { AGENT_PATHS } from '../paths.js';
import { RESULT_SPOOL, sendResult, type ResultSpool } from '../result-spool.js';

export const START_MESSAGE = 'Begin the task in the system prompt. Call `finish` with your answer when done.';
export const STEER_PREFIX = '[Steer from parent]';
export const NUDGE = '[No tool call] Your reply called no tool; the run goes on until you call one. Continue with a tool call — call `finish` with your answer when done.';
export const SALVAGE_REQUEST = (why: EndReason) =>
  `[Salvage] The run is ending (${why}) before \`finish\`; tools are off. In a few lines, report what you found and which files matter (their paths), for your parent.`;

/** Share of the context window the most recent turns may keep through a compaction. */
const KEEP_SHARE = 0.25;
const MAX_KEPT_TURNS = 12;
const COMPACT_MAX_TOKENS = 4000;
const SALVAGE_MAX_TOKENS = 1000;
const FALLBACK_CHARS = 4000;

export interface AgentLoopOptions {
  broker: Broker;
  packet: LoopPacket;
  roots?: Roots;
  spillDir?: string;
  resultSpool?: ResultSpool;
  /** Aborted on SIGTERM: the loop stops at once and salvages. */
  stop?: AbortSignal;
  /**
   * The connection's `hello` when the runtime did not wait for it (BrokerClient's
   * `pipelineHello`): the first model call waits for it, and a refusal rejects run() before
   * anything is asked or salvaged — the bearer is refused for every call then.
   */
  ready?: Promise<unknown>;
  /** The Workspace section's lines; by default gathered at start when the agent is workspaceAware. */
  workspaceInfo?: readonly string[] | null;
  shellPath?: string;
  /** Strings scrubbed from every tool output (the bearer). */
  secrets?: readonly string[];
  log?: (event: Record<string, unknown>) => void;
  salvageTimeoutMs?: number;
  /** How long a model call in flight may still answer after SIGTERM. */
  stopGraceMs?: number;
  retryDelayMs?: number;
}

export interface AgentOutcome {
  finished: boolean;
  endReason: EndReason | null;
  steps: number;
  answer: string;
  resultSent: boolean;
}

class EndRun extends Error {
  constructor(readonly reason: EndReason) {
    super(reason);
  }
}

export class AgentLoop {
  readonly system: string;
  readonly tools: ToolDef[];
  readonly #schemas: LlmTool[];
  readonly #o: Required<Omit<AgentLoopOptions, 'workspaceInfo' | 'shellPath' | 'log' | 'ready'>> & Pick<AgentLoopOptions, 'log' | 'ready'>;
  readonly #env: CallEnv;
  readonly #children = new Map<string, ChildInfo>();
  #mirror: LlmMessage[] = [];
  #inbox: string[] = [];
  #step = 0;
  #formatErrors = 0;
  #contextUsed = 0;
  #compactStreak = 0;
  /** The smaller of the packet's window and the one the supervisor reports for the model. */
  #window: number;
  #lastText = '';
  /** Set when a model call was abandoned: the supervisor's conversation may hold a reply we never saw. */
  #unknownTail = false;
  /**
   * User messages that ride the next model call (`llm.complete`'s `append`: added with its turn,
   * both or neither) instead of an `llm.append` round trip of their own: the start message and
   * steers. Sent any other way first (#append, the salvage) when something else goes before.
   */
  #carry: LlmMessage[] = [];

  constructor(o: AgentLoopOptions) {
    const a = o.packet.agent;
    this.#o = {
      broker: o.broker,
      packet: o.packet,
      roots: o.roots ?? JAIL_ROOTS,
      spillDir: o.spillDir ?? AGENT_PATHS.spill,
      resultSpool: o.resultSpool ?? RESULT_SPOOL,
      stop: o.stop ?? new AbortController().signal,
      ready: o.ready,
      secrets: o.secrets ?? [],
      log: o.log,
      salvageTimeoutMs: o.salvageTimeoutMs ?? 60_000,
      stopGraceMs: o.stopGraceMs ?? 3000,
      retryDelayMs: o.retryDelayMs ?? 2000,
    };
    this.#window = a.contextWindow;
    this.tools = offeredTools(a.tools, { shellPath: o.shellPath, egress: o.packet.caps.includes('net.egress'), webSearchUrl: a.webSearchUrl });
    this.#schemas = toolSchemas(this.tools);
    const info = o.workspaceInfo !== undefined ? o.workspaceInfo : a.workspaceAware ? gatherWorkspaceInfo(this.#o.roots) : null;
    this.system = buildSystemPrompt(o.packet, this.tools, info);
    this.#env = {
      tools: new Map(this.tools.map((t) => [t.name, t])),
      ctx: { roots: this.#o.roots, broker: o.broker, children: this.#children, maxChars: a.toolResultMaxChars, runTimeoutMs: o.packet.timeoutMs },
      stop: this.#o.stop,
      spiller: new Spiller(this.#o.spillDir),
      secrets: this.#o.secrets,
    };
  }

  get #agent() {
    return this.#o.packet.agent;
  }

  async run(): Promise<AgentOutcome> {
    // The first step's steer poll goes at once (beside the connection's `hello`, when the
    // runtime did not wait for it) and the start message rides the first model call: one
    // round trip before that call, not three.
    this.#firstPoll = this.#poll();
    if (this.#o.ready) await this.#o.ready;
    let reason: EndReason;
    try {
      this.#o.log?.({ ev: 'start', tools: this.tools.map((t) => t.name), systemBytes: Buffer.byteLength(this.system) });
      this.#carry.push(fitMessage({ role: 'user', content: START_MESSAGE }));
      for (;;) {
        if (this.#o.stop.aborted) throw new EndRun('terminated');
        if (this.#step >= this.#agent.maxSteps) throw new EndRun('max_steps');
        this.#step++;
        const done = await this.#oneStep();
        if (done) return await this.#finish(done);
      }
    } catch (e) {
      reason = e instanceof EndRun ? e.reason : 'internal';
      if (!(e instanceof EndRun)) this.#o.log?.({ ev: 'bug', message: String((e as Error)?.stack ?? e).slice(0, 2000) });
    }
    return this.#salvage(reason);
  }

  async #oneStep(): Promise<{ answer: string; files: string[] } | null> {
    const t0 = Date.now();
    // (a) steers, only here: never between a tool call and its result.
    const polled = this.#firstPoll ?? this.#poll();
    this.#firstPoll = undefined;
    const steers = [...this.#inbox.splice(0), ...(await polled)];
    if (steers.length) this.#carry.push(fitMessage({ role: 'user', content: steers.map((s) => `${STEER_PREFIX} ${s}`).join('\n\n') }));
    // (b) compaction from the last reply's real count.
    if (this.#contextUsed >= this.#agent.autoCompactThreshold * this.#window) await this.#compact();
    // (c) the model.
    const reply = await this.#complete('step', { tools: this.#schemas, maxTokens: this.#agent.maxOutputTokens });
    // (d) + (e)
    const calls = reply.message.toolCalls;
    const results: LlmMessage[] = [];
    const ran: string[] = [];
    let finish: { answer: string; files: string[] } | undefined;
    if (calls.length === 0) {
      this.#formatErrors++;
      results.push({ role: 'user', content: reply.finishReason === 'length' ? `${NUDGE} (Your reply was cut at the output limit: say less per reply.)` : NUDGE });
    }
    for (const c of calls) {
      if (finish) results.push(notRun(c, '`finish` ended the run').message);
      else if (this.#o.stop.aborted) results.push(notRun(c, 'the run is stopping').message);
      else {
        const out = await this.#beating(c.name, () => executeCall(c, this.#env));
        results.push(out.message);
        this.#formatErrors = out.formatError ? this.#formatErrors + 1 : 0;
        if (!out.formatError) ran.push(c.name);
        finish = out.finish;
      }
    }
    // (f)
    await this.#append(results);
    this.#o.log?.({ ev: 'step', step: this.#step, tools: ran, calls: calls.length, contextUsed: this.#contextUsed, formatErrors: this.#formatErrors, ms: Date.now() - t0 });
    if (finish) return finish;
    if (this.#o.stop.aborted) throw new EndRun('terminated');
    if (this.#formatErrors >= this.#agent.maxConsecutiveFormatErrors) throw new EndRun('format_errors');
    // (g) one step for the supervisor; its reply may carry steers for the next boundary.
    await this.#progress(ran);
    return null;
  }

  /**
   * Runs one tool call while reporting progress every heartbeatMs: a long build is work, and
   * the supervisor's stuck-kill counts only silence. Steers a beat brings wait in the inbox for
   * the next step boundary; a failed beat is skipped (the step's own progress reports errors).
   */
  async #beating<T>(tool: string, run: () => Promise<T>): Promise<T> {
    const beat = async () => {
      try {
        const r = (await this.#o.broker.call('progress', { line: `step ${this.#step}: running ${tool}`.slice(0, 200), tool })) as { steers?: unknown };
        this.#inbox.push(...strings(r?.steers));
      } catch {
        // the next beat, or the step's progress, tries again
      }
    };
    const timer = setInterval(() => void beat(), this.#agent.heartbeatMs ?? 30_000);
    try {
      return await run();
    } finally {
      clearInterval(timer);
    }
  }

  /** The first step's poll, sent beside the start message. */
  #firstPoll: Promise<string[]> | undefined;

  async #poll(): Promise<string[]> {
    try {
      return strings(((await this.#o.broker.call('steer.poll', {})) as { steers?: unknown })?.steers);
    } catch {
      return []; // a missed poll costs nothing: the next progress reply carries them too
    }
  }

  async #progress(ran: string[]): Promise<void> {
    const tool = ran[ran.length - 1];
    const line = `step ${this.#step}: ${[...new Set(ran)].join(', ') || 'no tool'}`.slice(0, 200);
    try {
      const r = (await this.#o.broker.call('progress', { line, ...(tool ? { tool } : {}) })) as { steers?: unknown };
      this.#inbox.push(...strings(r?.steers));
    } catch (e) {
      throw new EndRun(errorCode(e) === 'timeout' ? 'max_steps' : 'broker_error');
    }
  }

  async #complete(purpose: 'step' | 'compact', extra: { tools?: LlmTool[]; maxTokens: number }): Promise<LlmReply> {
    const params = { system: this.system, purpose, step: this.#step, ...extra };
    // The carried messages ride this call when they fit its line; otherwise they go first on their own.
    const carry = this.#carry.length > 0 && carries(params, this.#carry) ? this.#carry.splice(0) : [];
    if (this.#carry.length > 0) await this.#append([]);
    const r = await completeOnce(this.#o.broker, carry.length > 0 ? { ...params, append: carry } : params, this.#o);
    // Both or neither: appended with the reply, or not at all (an abandoned call's fate is unknown: no model call follows it).
    if (r.kind === 'reply') this.#mirror.push(...carry);
    else this.#carry.unshift(...carry);
    if (r.kind === 'abandoned') {
      this.#unknownTail = true;
      throw new EndRun('terminated');
    }
    if (r.kind === 'error') throw new EndRun(errorCode(r.error) === 'budget_exceeded' ? 'budget_exceeded' : 'model_error');
    const m = r.reply.message;
    this.#mirror.push({ role: 'assistant', content: m.content, ...(m.toolCalls.length ? { toolCalls: m.toolCalls.map(({ id, name, input }) => ({ id, name, input })) } : {}) });
    if (m.content.trim()) this.#lastText = m.content;
    this.#contextUsed = r.reply.contextUsed;
    if (r.reply.contextWindow > 0) this.#window = Math.min(this.#window, r.reply.contextWindow);
    if (purpose === 'step' && this.#contextUsed < this.#agent.autoCompactThreshold * this.#window) this.#compactStreak = 0;
    return r.reply;
  }

  /** Appends the carried messages, then these, in line-sized batches. */
  async #append(messages: LlmMessage[]): Promise<void> {
    const fitted = [...this.#carry.splice(0), ...messages.map((m) => fitMessage(m))];
    for (const batch of batches(fitted)) {
      try {
        await this.#o.broker.call('llm.append', { messages: batch });
      } catch {
        throw new EndRun('broker_error');
      }
    }
    this.#mirror.push(...fitted);
  }

  async #compact(): Promise<void> {
    const before = this.#mirror.slice();
    await this.#append([{ role: 'user', content: COMPACT_REQUEST }]);
    const reply = await this.#complete('compact', { maxTokens: Math.min(this.#agent.maxOutputTokens, COMPACT_MAX_TOKENS) });
    // Each compaction in a row keeps half as much: the kept turns were what kept the context full.
    const budget = Math.floor((this.#window * KEEP_SHARE) / 2 ** this.#compactStreak);
    const { kept, dropped } = chooseKept(before, budget, MAX_KEPT_TURNS);
    const messages = resetMessages({
      summary: reply.message.content.trim() || '(no summary was given)',
      objective: this.#o.packet.objective ?? this.#o.packet.task,
      dropped,
      kept,
      children: this.#children,
    });
    const [first = [], ...rest] = batches(messages);
    try {
      await this.#o.broker.call('llm.reset', { messages: first });
    } catch {
      throw new EndRun('broker_error');
    }
    this.#mirror = first.slice();
    for (const b of rest) await this.#append(b);
    this.#compactStreak++;
    this.#contextUsed = 0;
    this.#o.log?.({ ev: 'compact', step: this.#step, kept: kept.length, dropped: dropped.length });
  }

  async #finish(done: { answer: string; files: string[] }): Promise<AgentOutcome> {
    const sent = await this.#sendResult({ answer: done.answer, files: done.files });
    this.#o.log?.({ ev: 'end', finished: true, steps: this.#step, resultSent: sent });
    return { finished: true, endReason: null, steps: this.#step, answer: done.answer, resultSent: sent };
  }

  /** ONE bounded model call with no tools; when it cannot be had, the last words of the mirror. */
  async #salvage(reason: EndReason): Promise<AgentOutcome> {
    let answer = '';
    if (!this.#unknownTail) {
      const ms = this.#o.stop.aborted ? Math.min(this.#o.salvageTimeoutMs, 5000) : this.#o.salvageTimeoutMs;
      const attempt = async () => {
        // What was carried for a model call that never took it (the start message, a steer) goes first.
        for (const batch of batches([...this.#carry.splice(0), { role: 'user', content: SALVAGE_REQUEST(reason) }])) await this.#o.broker.call('llm.append', { messages: batch });
        const params = { system: this.system, purpose: 'salvage' as const, step: this.#step, maxTokens: Math.min(this.#agent.maxOutputTokens, SALVAGE_MAX_TOKENS) };
        return this.#o.broker.call('llm.complete', params);
      };
      const r = await bounded(attempt(), ms);
      if (r.ok && typeof r.value?.message?.content === 'string') answer = r.value.message.content.trim();
    }
    if (!answer) {
      answer = this.#lastText.trim()
        ? `[No salvage report could be had; the run ended (${reason}). The agent's last words, cut to head and tail:]\n${headTail(this.#lastText, FALLBACK_CHARS)}`
        : `[The run ended (${reason}) before the agent wrote any text. Files it wrote, if any, are in /workspace/out.]`;
    }
    const sent = await this.#sendResult({ answer, partial: true, endReason: reason });
    this.#o.log?.({ ev: 'end', finished: false, endReason: reason, steps: this.#step, resultSent: sent });
    return { finished: false, endReason: reason, steps: this.#step, answer, resultSent: sent };
  }

  async #sendResult(value: Record<string, unknown>): Promise<boolean> {
    const r = await bounded(sendResult((m, p) => this.#o.broker.call(m, p), value, this.#o.resultSpool), 30_000);
    return r.ok;
  }
}

/** Room a model call's line keeps for its envelope (id, method, bearer) beside the params. */
const LINE_ENVELOPE_BYTES = 1024;
/** Whether `append` fits beside these params in one line (and within an append's own caps). */
function carries(params: object, append: readonly LlmMessage[]): boolean {
  if (append.length > MAX_BATCH_MESSAGES) return false;
  const bytes = Buffer.byteLength(JSON.stringify(append));
  return bytes <= MAX_BATCH_JSON_BYTES && Buffer.byteLength(JSON.stringify(params)) + bytes + LINE_ENVELOPE_BYTES <= MAX_LINE_BYTES;
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export function runAgent(o: AgentLoopOptions): Promise<AgentOutcome> {
  return new AgentLoop(o).run();
}
