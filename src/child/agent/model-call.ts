/**
 * One `llm.complete` as the loop makes it: the reply checked into shape, one retry of a
 * provider hiccup, and SIGTERM honoured — a call in flight when the run is told to stop gets
 * a short grace; past it the loop gives up on the conversation (the supervisor may still
 * append that reply) and salvages without the model.
 */
import type { ParamsOf } from '../../protocol/index.js';
import type { Broker, LlmReply } from './types.js';
import { errorCode } from './types.js';

export const RETRYABLE = new Set(['model_unavailable', 'rate_limited']);

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

const settle = <T>(p: Promise<T>): Promise<Outcome<T>> => p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }));
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Resolves when `signal` aborts (at once if it has). */
function aborted(signal: AbortSignal): { promise: Promise<'stop'>; dispose: () => void } {
  let on: () => void = () => {};
  const promise = new Promise<'stop'>((resolve) => {
    if (signal.aborted) return resolve('stop');
    on = () => resolve('stop');
    signal.addEventListener('abort', on, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', on) };
}

/** The reply in the contract's shape; what a provider left out becomes empty, never undefined. */
export function asReply(v: unknown): LlmReply {
  const r = (v ?? {}) as Partial<LlmReply>;
  const m = (r.message ?? {}) as Partial<LlmReply['message']>;
  const calls = Array.isArray(m.toolCalls) ? m.toolCalls : [];
  return {
    message: {
      role: 'assistant',
      content: typeof m.content === 'string' ? m.content : '',
      toolCalls: calls
        .filter((c) => c && typeof c === 'object')
        .map((c) => ({ id: String(c.id), name: String(c.name), input: c.input ?? {}, ...(c.inputError ? { inputError: String(c.inputError) } : {}) })),
    },
    finishReason: r.finishReason ?? 'stop',
    usage: r.usage ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    costUsd: r.costUsd ?? null,
    model: typeof r.model === 'string' ? r.model : '',
    contextWindow: typeof r.contextWindow === 'number' ? r.contextWindow : 0,
    contextUsed: typeof r.contextUsed === 'number' ? r.contextUsed : 0,
    budget: r.budget ?? { tokensLeft: null, costLeftUsd: null },
  };
}

export type ModelCallResult = { kind: 'reply'; reply: LlmReply } | { kind: 'error'; error: unknown } | { kind: 'abandoned' };

export async function completeOnce(
  broker: Broker,
  params: ParamsOf<'llm.complete'>,
  o: { stop: AbortSignal; stopGraceMs: number; retryDelayMs: number },
): Promise<ModelCallResult> {
  for (let attempt = 0; ; attempt++) {
    const call = settle(broker.call('llm.complete', params));
    const stop = aborted(o.stop);
    let first: Outcome<unknown> | 'stop';
    try {
      first = await Promise.race([call, stop.promise]);
    } finally {
      stop.dispose();
    }
    if (first === 'stop') {
      const late = await Promise.race([call, sleep(o.stopGraceMs).then(() => 'late' as const)]);
      if (late === 'late') return { kind: 'abandoned' };
      first = late;
    }
    if (first.ok) return { kind: 'reply', reply: asReply(first.value) };
    if (attempt > 0 || !RETRYABLE.has(errorCode(first.error)) || o.stop.aborted) return { kind: 'error', error: first.error };
    await sleep(o.retryDelayMs);
  }
}

/** A promise bounded by a deadline (`timeout` result past it); the work itself is not stopped. */
export async function bounded<T>(p: Promise<T>, ms: number): Promise<Outcome<T>> {
  let t: NodeJS.Timeout | undefined;
  const deadline = new Promise<Outcome<T>>((r) => {
    t = setTimeout(() => r({ ok: false, error: Object.assign(new Error(`no answer within ${ms} ms`), { code: 'timeout' }) }), ms);
  });
  try {
    return await Promise.race([settle(p), deadline]);
  } finally {
    clearTimeout(t);
  }
}
