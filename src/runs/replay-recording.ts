/**
 * An agent run's model calls as recorded, for `brig replay RUN` (agent-replay.ts): what each
 * call sent (a canonical digest of system + messages + tools, and its content-free shape) and
 * what the model replied, read back from the run's transcript (runs/<id>/transcript.jsonl).
 *
 * Guarantees: the digest is computed the same way when a call is recorded and when it is
 * replayed, so a replayed loop that sends the same request yields the same digest; a
 * divergence is described by roles, tool names and lengths only — never content (INV-7: it
 * lands in the run record and the ledger). Threat: none beyond the transcript's own (it is the
 * run's file, written by the supervisor only).
 */
import { createHash } from 'node:crypto';
import type { ConversationMessage, ToolSchema } from './model-port.js';
import type { LlmReply } from './types.js';

/** What a request looked like, content-free: lengths, roles, tool names. */
export interface RequestShape {
  system: number;
  messages: { role: string; len: number; calls?: string[] }[];
  tools: string[];
}

/** Recorded on every reply line of a transcript (`req`): what the call sent, content-free. */
export interface RequestStamp {
  digest: string;
  system: number;
  tools: string[];
  toolsDigest: string;
  contextWindow: number;
}

/** One recorded model call: what was sent, and the reply the loop got. */
export interface RecordedCall {
  purpose: string;
  step: number | null;
  stamp: RequestStamp | null;
  /** The conversation's shape when the call was made (the transcript holds it whole). */
  messages: RequestShape['messages'];
  reply: Pick<LlmReply, 'message' | 'finishReason' | 'usage' | 'costUsd' | 'model'>;
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** The canonical digest of one request (system, the messages sent, the tools offered). */
export function requestDigest(system: string, messages: readonly ConversationMessage[], tools: readonly ToolSchema[]): string {
  return sha(JSON.stringify({ system, messages, tools }));
}

export function stampOf(system: string, messages: readonly ConversationMessage[], tools: readonly ToolSchema[], contextWindow: number): RequestStamp {
  return { digest: requestDigest(system, messages, tools), system: system.length, tools: tools.map((t) => t.name), toolsDigest: sha(JSON.stringify(tools)), contextWindow };
}

export function messagesShape(messages: readonly ConversationMessage[]): RequestShape['messages'] {
  return messages.map((m) => {
    const calls = 'toolCalls' in m && Array.isArray(m.toolCalls) && m.toolCalls.length ? m.toolCalls.map((c) => c.name) : undefined;
    return { role: m.role, len: m.content.length + (calls ? JSON.stringify((m as { toolCalls: unknown }).toolCalls).length : 0), ...(calls ? { calls } : {}) };
  });
}

/** The model calls a transcript records, in order (pure; torn lines are dropped). */
export function recordedCalls(transcript: string): RecordedCall[] {
  let messages: ConversationMessage[] = [];
  const out: RecordedCall[] = [];
  for (const line of transcript.split('\n')) {
    if (!line) continue;
    let ev: { t?: string; messages?: ConversationMessage[]; message?: ConversationMessage; purpose?: string; step?: number; req?: RequestStamp; usage?: LlmReply['usage']; costUsd?: number | null; model?: string; finishReason?: LlmReply['finishReason'] };
    try {
      ev = JSON.parse(line);
    } catch {
      continue;
    }
    if (ev.t === 'reset') messages = [...(ev.messages ?? [])];
    else if (ev.t === 'append') messages.push(...(ev.messages ?? []));
    else if (ev.t === 'reply' && ev.message) {
      out.push({
        purpose: ev.purpose ?? 'step',
        step: typeof ev.step === 'number' ? ev.step : null,
        stamp: ev.req ?? null,
        messages: messagesShape(messages),
        reply: {
          message: ev.message as LlmReply['message'],
          finishReason: ev.finishReason ?? 'stop',
          usage: ev.usage ?? { input: 0, output: 0, cacheRead: 0, total: 0 } as LlmReply['usage'],
          costUsd: ev.costUsd ?? null,
          model: ev.model ?? 'recorded',
        },
      });
      messages.push(ev.message);
    }
  }
  return out;
}

/** What differs between a recorded request and a replayed one, content-free (null: nothing). */
export function requestDifference(rec: RecordedCall, purpose: string, stamp: RequestStamp, messages: RequestShape['messages']): string | null {
  if (rec.purpose !== purpose) return `purpose: recorded ${rec.purpose}, replayed ${purpose}`;
  if (!rec.stamp) return null;
  if (rec.stamp.digest === stamp.digest) return null;
  const what: string[] = [];
  if (rec.stamp.system !== stamp.system) what.push(`system prompt: ${rec.stamp.system} chars recorded, ${stamp.system} replayed`);
  if (rec.stamp.toolsDigest !== stamp.toolsDigest) what.push(`tools: [${rec.stamp.tools.join(', ')}] recorded, [${stamp.tools.join(', ')}] replayed`);
  const n = Math.max(rec.messages.length, messages.length);
  for (let i = 0; i < n; i++) {
    const a = rec.messages[i];
    const b = messages[i];
    const d = (x: typeof a) => (x ? `${x.role}${x.calls ? `(${x.calls.join(',')})` : ''} ${x.len} chars` : 'none');
    if (!a || !b || a.role !== b.role || a.len !== b.len || (a.calls ?? []).join() !== (b.calls ?? []).join()) {
      what.push(`message ${i + 1} of ${messages.length}: ${d(a)} recorded, ${d(b)} replayed`);
      break;
    }
  }
  // Same shapes, different bytes (a same-length edit).
  if (what.length === 0) what.push('messages: same roles, tool names and lengths, different content');
  return what.join('; ');
}
