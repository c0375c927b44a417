/**
 * A scripted in-process broker for the agent loop's unit tests. It keeps the conversation the
 * way the supervisor does (append / reset / complete appends the assistant turn), refuses a
 * line over 64 KiB as the in-jail client does, checks Codex's invariant (every tool call has
 * its result before the next model call) and counts steps like the supervisor (`progress`
 * past maxSteps → `timeout`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Broker, LlmMessage, LlmReply } from '../../../src/child/agent/types.js';
import type { LoopPacket } from '../../../src/child/agent/packet.js';

export class CodeError extends Error {
  constructor(readonly code: string, message = code) {
    super(message);
  }
}

export interface CompleteParams {
  system: string;
  append?: LlmMessage[];
  tools?: { name: string; description: string; parameters: unknown }[];
  maxTokens?: number;
  purpose?: 'step' | 'compact' | 'salvage';
  step?: number;
}

type Scripted = Partial<LlmReply['message']> & { contextUsed?: number; contextWindow?: number };
type Script = (p: CompleteParams, fake: FakeBroker) => Scripted | Promise<Scripted>;

export class FakeBroker implements Broker {
  calls: { method: string; params: any }[] = [];
  conversation: LlmMessage[] = [];
  steers: string[] = [];
  steps = 0;
  maxSteps = Infinity;
  violations: string[] = [];
  /** Run before each call is answered (to inject steers, throw, …). */
  before?: (method: string, params: any) => void | Promise<void>;
  readonly #script: Script[];
  readonly extra: Record<string, (params: any) => unknown>;

  constructor(script: Script[], extra: Record<string, (params: any) => unknown> = {}) {
    this.#script = [...script];
    this.extra = extra;
  }

  of(method: string) {
    return this.calls.filter((c) => c.method === method);
  }

  async call(method: string, params: any): Promise<any> {
    const line = JSON.stringify({ v: 1, id: 1, method, token: 'x'.repeat(64), params });
    if (Buffer.byteLength(line) > 64 * 1024) {
      this.violations.push(`line over 64 KiB: ${method} ${Buffer.byteLength(line)}`);
      throw new CodeError('invalid_input', 'line too long');
    }
    this.calls.push({ method, params: JSON.parse(JSON.stringify(params)) });
    await this.before?.(method, params);
    switch (method) {
      case 'llm.append':
        if (params.messages.length < 1 || params.messages.length > 64) this.violations.push('append size');
        this.conversation.push(...params.messages);
        return { messages: this.conversation.length };
      case 'llm.reset':
        this.conversation = [...params.messages];
        return { messages: this.conversation.length };
      case 'llm.complete': {
        // `append` lands with the turn, both or neither, as the supervisor does it.
        const carried: LlmMessage[] = params.append ?? [];
        if (params.append && (carried.length < 1 || carried.length > 64)) this.violations.push('append size');
        const before = this.conversation.length;
        this.conversation.push(...carried);
        this.#checkPairing();
        let m: Scripted;
        try {
          const next = this.#script.shift();
          if (!next) throw new CodeError('model_unavailable', 'script ran out');
          m = await next(params, this);
        } catch (e) {
          this.conversation.length = before;
          throw e;
        }
        const message = { role: 'assistant' as const, content: m.content ?? '', toolCalls: m.toolCalls ?? [] };
        this.conversation.push({ role: 'assistant', content: message.content, ...(message.toolCalls.length ? { toolCalls: message.toolCalls.map(({ id, name, input }) => ({ id, name, input })) } : {}) });
        return {
          message, finishReason: message.toolCalls.length ? 'tool_calls' : 'stop', usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, total: 2 },
          costUsd: null, model: 'fake', contextWindow: m.contextWindow ?? 100_000, contextUsed: m.contextUsed ?? 1000, budget: { tokensLeft: null, costLeftUsd: null },
        } satisfies LlmReply;
      }
      case 'steer.poll':
        return { steers: this.steers.splice(0) };
      case 'progress':
        if (this.steps >= this.maxSteps) throw new CodeError('timeout', 'max_steps spent');
        this.steps++;
        return { steers: this.steers.splice(0), stepsExecuted: this.steps };
      case 'result':
        return { saved: true };
      default:
        if (this.extra[method]) return this.extra[method]!(params);
        throw new CodeError('invalid_input', `unknown method ${method}`);
    }
  }

  #checkPairing(): void {
    const open = new Set<string>();
    for (const m of this.conversation) {
      if (m.role === 'assistant') for (const c of m.toolCalls ?? []) open.add(c.id);
      if (m.role === 'tool') {
        if (!open.has(m.toolCallId)) this.violations.push(`result without a call: ${m.toolCallId}`);
        open.delete(m.toolCallId);
      }
    }
    if (open.size) this.violations.push(`unanswered calls: ${[...open].join(',')}`);
  }

  /** The value sent with `result`. */
  get result(): any {
    const r = this.of('result');
    return r.length ? r[r.length - 1]!.params : undefined;
  }
}

let n = 0;
export const call = (name: string, input: unknown, extra: Record<string, unknown> = {}) => ({ id: `c${++n}`, name, input, ...extra });

export function packet(agent: Partial<LoopPacket['agent']> = {}, rest: Partial<LoopPacket> = {}): LoopPacket {
  return {
    runId: 'r-0000000000000001', task: 'count the lines', objective: 'know the size of the code', artifactRefs: [], domainKnowledge: [],
    parentSummary: null, depth: 1, maxDepth: 3, timeoutMs: 600_000, caps: ['exec', 'llm'], upstream: [],
    ...rest,
    agent: {
      name: 'tester', instructions: 'Be brief.', tools: ['shell', 'read_file', 'write_file', 'edit_file', 'list_files', 'grep_files'], maxSteps: 10,
      workspaceAware: false, role: 'worker', autoCompactThreshold: 0.8, toolResultMaxChars: 16_000, maxConsecutiveFormatErrors: 3,
      contextWindow: 100_000, maxOutputTokens: 2000, ...agent,
    },
  };
}

/** A temp workspace and artifacts root. */
export function tempRoots(): { workspace: string; artifacts: string; base: string; cleanup: () => void } {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'brig-agent-')));
  const workspace = path.join(base, 'workspace');
  const artifacts = path.join(base, 'artifacts');
  fs.mkdirSync(path.join(workspace, 'out'), { recursive: true });
  fs.mkdirSync(artifacts);
  return { workspace, artifacts, base, cleanup: () => fs.rmSync(base, { recursive: true, force: true }) };
}

export function loopOptions(broker: FakeBroker, p: LoopPacket, roots: { workspace: string; artifacts: string }) {
  return {
    broker, packet: p, roots, spillDir: path.join(roots.workspace, '.brig/spill'),
    resultSpool: { dir: path.join(roots.workspace, '.brig/result'), file: path.join(roots.workspace, '.brig/result/value.json') },
    workspaceInfo: null, retryDelayMs: 1, salvageTimeoutMs: 2000, stopGraceMs: 50,
  };
}
