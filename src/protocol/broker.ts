/**
 * The broker's vocabulary (protocol v1): the one method → capability table, every method's
 * params and reply, and the conversation words an agent child speaks through `llm.*`. The
 * broker validates params with strict zod schemas declared against `ParamsOf<M>`; runs/
 * answers with `ReplyOf<M>`; the child's SDK and agent loop call with the same two types, so
 * nothing is cast or copied across the jail boundary.
 */
import type { Capability } from './leases.js';
import type { GrepOptions, ResultKind, SliceOutput } from './refs.js';
import type { EndReason, RunStatus } from './runs.js';
import type { HistoryPage, SendMode, SendOutcome, SteerOutcome } from './supervisor.js';
import type { ErrorCode } from './error-codes.js';

export const PROTOCOL_VERSION = 1;
/** Longest accepted line, newline excluded. */
export const MAX_LINE_BYTES = 65536;
/** Deepest accepted JSON nesting (objects + arrays). */
export const MAX_NESTING = 32;
/** Longest reply line; a bigger handler result becomes an `output_too_large` error. */
export const MAX_REPLY_BYTES = 1024 * 1024;

/** The one method → required capability table (null = any valid lease). */
export const BROKER_METHODS = {
  hello: null,
  progress: null,
  log: null,
  checkpoint: null,
  resume: null,
  result: null,
  'steer.poll': null,
  spawn: 'spawn',
  wait: 'spawn',
  'refs.list': 'refs.read',
  'refs.read': 'refs.read',
  'refs.grep': 'refs.read',
  'refs.jq': 'refs.read',
  'refs.sql': 'refs.read',
  'refs.jsonpath': 'refs.read',
  'llm.append': 'llm',
  'llm.reset': 'llm',
  'llm.complete': 'llm',
  'child.kill': 'kill',
  'child.steer': 'steer',
  'child.send': 'steer',
  'child.status': 'spawn',
  'child.explain': 'spawn',
  'child.history': 'spawn',
  'session.status': null,
  'session.search': null,
  'session.expand': null,
  'graph.run': 'graph',
  'graph.wait': 'graph',
  'graph.cancel': 'graph',
} as const satisfies Record<string, Capability | null>;
export type BrokerMethod = keyof typeof BROKER_METHODS;

// ── The conversation an agent child keeps through llm.* (docs/agents.md) ──

export interface LlmToolCall {
  id: string;
  name: string;
  input: unknown;
  /** Set when the provider's argument string was not a JSON object; `input` is then `{}`. */
  inputError?: string;
}

export type LlmMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string; isError?: boolean };

export interface LlmTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** input = every input token counted once (cached included); cacheRead/cacheWrite are subsets of input. */
export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  total: number;
}

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'error';

export const LLM_PURPOSES = ['step', 'compact', 'salvage'] as const;
export type LlmPurpose = (typeof LLM_PURPOSES)[number];

/** What one `llm.complete` answers: the turn, what it cost, and what is left of the budget. */
export interface LlmReply {
  message: { role: 'assistant'; content: string; toolCalls: LlmToolCall[] };
  finishReason: FinishReason;
  usage: Usage;
  costUsd: number | null;
  model: string;
  contextWindow: number;
  contextUsed: number;
  budget: { tokensLeft: number | null; costLeftUsd: number | null };
}

// ── What a parent learns of its children ──

/** What a child sees of a ref: no host path, no preview (it slices what it needs). */
export interface ChildRefHandle {
  ref: string;
  path: string;
  kind: ResultKind;
  bytes: number;
  rows?: number;
}

export interface RunErrorView {
  code: ErrorCode;
  message: string;
}

/** One child as a spawn or a wait returns it. */
export interface ChildSummary {
  runId: string;
  status: RunStatus;
  endReason: EndReason | null;
  /** The child's result when it is small (≤ 16,000 chars of JSON); else null and resultCut. */
  result: unknown;
  /** Set when the result was too big to cross back: it is the child's result.json ref. */
  resultCut?: { chars: number; hint: string };
  error: RunErrorView | null;
  missingOutputs: string[];
  partial?: true;
}

/** A summary with its ResultRef handles (bounded; `refsMore` counts those left out). */
export interface ChildSummaryWithRefs extends ChildSummary {
  refs: ChildRefHandle[];
  refsMore?: number;
  /**
   * An ended child's narrative-cast envelope — the one `brig result` shows (cast once, kept):
   * header, status, condensation line, body, footer, drill-in lines, session line. Absent
   * while the child runs, or when it could not be cast (`envelopeError` says why).
   */
  envelope?: string;
  envelopeError?: string;
}

// ── Params and replies, one entry per method ──

export interface BrokerParams {
  hello: Record<string, never>;
  progress: { line?: string | null | undefined; steps?: number | undefined; tool?: string | null | undefined };
  log: { level?: 'debug' | 'info' | 'warn' | 'error' | undefined; message: string };
  checkpoint: { state?: unknown };
  resume: Record<string, never>;
  /** A value that fits a line, or `spooled`: the SDK wrote it to /workspace/.brig/result/value.json. */
  result: { value?: unknown } | { spooled: { bytes: number } };
  'steer.poll': Record<string, never>;
  /** The request is a spawn request (protocol/runs.ts); its schema is applied by the supervisor. */
  spawn: { request: Record<string, unknown> };
  /** Blocks until these children of the caller ended (or timeoutMs); the caller frees its slot meanwhile. */
  wait: { runs: string[]; timeoutMs?: number | undefined };
  'refs.list': { run: string };
  'refs.read': { ref: string; offset?: number | undefined; length?: number | undefined; line?: number | undefined; lines?: number | undefined };
  'refs.grep': { ref: string; pattern: string } & { [K in keyof GrepOptions]?: GrepOptions[K] | undefined };
  'refs.jq': { ref: string; filter: string };
  'refs.sql': { ref: string; sql: string; maxRows?: number | undefined };
  'refs.jsonpath': { ref: string; path: string };
  'llm.append': { messages: LlmMessage[] };
  'llm.reset': { messages: LlmMessage[] };
  'llm.complete': {
    system: string;
    /**
     * Messages added to the conversation together with the turn, before it: both or neither
     * (a refused or failed call appends nothing, so it may be sent again as it was). Saves the
     * `llm.append` round trip before a model call.
     */
    append?: LlmMessage[] | undefined;
    tools?: LlmTool[] | undefined;
    maxTokens?: number | undefined;
    model?: string | undefined;
    purpose?: LlmPurpose | undefined;
    step?: number | undefined;
  };
  'child.kill': { child: string; reason?: string | undefined };
  'child.steer': { child: string; message: string };
  'child.send': { child: string; text: string; mode?: SendMode | undefined; timeoutMs?: number | undefined; maxTurns?: number | undefined; conversation?: string | undefined };
  'child.status': { child: string };
  'child.explain': { child: string };
  'child.history': { child: string; offset?: number | undefined; limit?: number | undefined };
  'session.status': Record<string, never>;
  /** A plain-text search (case-insensitive) over the caller's own transcript. */
  'session.search': { query: string; limit?: number | undefined };
  /** A page of the caller's own transcript from entry `offset` (the entry a search named). */
  'session.expand': { offset?: number | undefined; limit?: number | undefined };
  /** A graph spec (`graph: brig/v1`, YAML or JSON text) run as one child of the caller; blocks until it ends or timeoutMs. */
  'graph.run': { spec: string; timeoutMs?: number | undefined };
  /** A graph the caller started: its state now (timeoutMs 0) or once it ends, waiting at most timeoutMs. */
  'graph.wait': { graphId: string; timeoutMs?: number | undefined };
  /** A graph the caller started, cancelled: its running nodes killed, the rest skipped. */
  'graph.cancel': { graphId: string };
}

export interface BrokerReplies {
  hello: { v: number; runId: string; packet: unknown; methods: BrokerMethod[] };
  progress: { steers: string[]; stepsExecuted: number };
  log: { logged: true };
  checkpoint: { saved: true };
  resume: { checkpoint: unknown; untrusted: true };
  result: { saved: true; spooled?: true };
  'steer.poll': { steers: string[] };
  spawn: ChildSummaryWithRefs;
  wait: { runs: ChildSummaryWithRefs[] };
  'refs.list': { refs: ChildRefHandle[]; more: number };
  'refs.read': SliceOutput;
  'refs.grep': SliceOutput;
  'refs.jq': SliceOutput;
  'refs.sql': SliceOutput;
  'refs.jsonpath': SliceOutput;
  'llm.append': { messages: number };
  'llm.reset': { messages: number };
  'llm.complete': LlmReply;
  'child.kill': { runId: string; endReason: EndReason | null };
  'child.steer': SteerOutcome;
  'child.send': SendOutcome;
  'child.status': ChildSummary & { stepsExecuted: number; tokens: number | null; costUsd: number | null; progressLine: string | null };
  'child.explain': ChildSummary & {
    caps: Capability[] | null;
    budget: { tokens: number; costUsd: number } | null;
    maxSteps: number;
    timeoutMs: number;
    tokens: number | null;
    costUsd: number | null;
    outputs: { path: string; bytes: number }[];
    hint: string;
  };
  'child.history': HistoryPage;
  'session.status': SessionStatus;
  'session.search': TranscriptMatches;
  'session.expand': HistoryPage;
  /**
   * The graph's id and state; once it ended, its bounded envelope (≤ 4 KiB) and its manifest
   * ref (JSONL, one row per node attempt: the caller drills in with refs.*); `running` when
   * timeoutMs passed first (the graph goes on; its end is in the ledger and `brig graph`).
   */
  'graph.run': GraphCallReply & { order: string[] };
  'graph.wait': GraphCallReply;
  /** The graph once its cancel went through (bounded: `running`, with a hint, when its kills take longer). */
  'graph.cancel': GraphCallReply;
}

/**
 * A graph as its caller sees it through the broker: its state, its nodes counted by state and
 * the ones running now (≤ 20 named), and once it ended its bounded envelope (≤ 4 KiB) and its
 * manifest ref (JSONL, one row per node attempt: the caller drills in with refs.*).
 */
export interface GraphCallReply {
  graphId: string;
  state: string;
  endReason: string | null;
  counts: Record<string, number>;
  running: string[];
  envelope: string | null;
  manifestRef: string | null;
  hint?: string;
}

/** What an agent sees of itself (`session_status`): what it used, what is left, its children. */
export interface SessionStatus {
  runId: string;
  agent: string | null;
  model: string | null;
  steps: { used: number; max: number };
  /** Used by this run; `budget` its lease's (null: none); `left` what binds the next call (its own and its tree's). */
  tokens: { used: number; budget: number | null; left: number | null };
  costUsd: { used: number | null; budget: number | null; left: number | null };
  elapsedMs: number;
  timeoutMs: number;
  timeLeftMs: number;
  children: { runId: string; agent: string; status: RunStatus; endReason: EndReason | null }[];
  childrenMore: number;
}

/** A search over a run's own transcript: each hit a bounded snippet, named by entry (what session.expand pages from). */
export interface TranscriptMatches {
  query: string;
  matches: { entry: number; t: string; role: string; snippet: string }[];
  /** Transcript entries searched (all of them). */
  entries: number;
  /** Hits past the limit, not shown. */
  more: number;
}

export type ParamsOf<M extends BrokerMethod> = BrokerParams[M];
export type ReplyOf<M extends BrokerMethod> = BrokerReplies[M];
