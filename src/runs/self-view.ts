/**
 * An agent looking at itself (issue 22, item 7): `session.status` — its steps, tokens and cost
 * used, what is left of its budgets and time, its children — and, for after a compaction,
 * `session.search` / `session.expand`: a plain-text search over its own transcript and a page
 * of it from the entry a hit names (the seeds' ctx_search / ctx_expand).
 *
 * Guarantees: read-only, and only the calling run's own record and transcript (the broker
 * verified who calls; no run id is taken from the params); every answer bounded (≤ 20 hits of
 * ≤ 300 characters, a page of ≤ 20 entries of ≤ 4,000 characters), the transcript streamed
 * line by line whatever its size; the search is a fixed string, never a pattern (no
 * backtracking for a hostile model to feed). Threat: a child reading another run's
 * conversation, or flooding its context or the supervisor's memory through a search.
 */
import { createReadStream } from 'node:fs';
import readline from 'node:readline';
import { elapsedMs, type ParamsOf, type ReplyOf } from '../protocol/index.js';
import { budgetLeft } from './llm-calls.js';
import type { RunPorts } from './run-table.js';
import type { RunRecord } from './types.js';

const MAX_CHILDREN_LISTED = 50;
const SNIPPET_CHARS = 300;
const DEFAULT_HITS = 10;

export function sessionStatus(p: RunPorts, r: RunRecord): ReplyOf<'session.status'> {
  const left = budgetLeft(p.table, r);
  const kids = p.table.all().filter((c) => c.parentRunId === r.id);
  const elapsed = elapsedMs(r, p.table.clock.now());
  const budget = (v: number | undefined) => (v === undefined || v === 0 ? null : v);
  return {
    runId: r.id,
    agent: r.agentSpec ?? null,
    model: r.model ?? null,
    steps: { used: r.stepsExecuted, max: r.maxSteps },
    tokens: { used: r.tokens ?? 0, budget: budget(r.budget?.tokens), left: left.tokensLeft },
    costUsd: { used: r.costUsd ?? null, budget: budget(r.budget?.costUsd), left: left.costLeftUsd },
    elapsedMs: elapsed,
    timeoutMs: r.timeoutMs,
    timeLeftMs: Math.max(0, r.timeoutMs - elapsed),
    children: kids.slice(-MAX_CHILDREN_LISTED).map((c) => ({ runId: c.id, agent: c.agent, status: c.status, endReason: c.endReason })),
    childrenMore: Math.max(0, kids.length - MAX_CHILDREN_LISTED),
  };
}

type Entry = { t?: unknown; messages?: unknown; message?: unknown };
type Message = { role?: unknown; content?: unknown; toolCalls?: unknown };

/** The text of one message a search looks at: its content and, for an assistant turn, its tool calls. */
function textOf(m: Message): string {
  const calls = Array.isArray(m.toolCalls) && m.toolCalls.length > 0 ? `\n${JSON.stringify(m.toolCalls)}` : '';
  return `${typeof m.content === 'string' ? m.content : ''}${calls}`;
}

function snippet(text: string, at: number, n: number): string {
  const from = Math.max(0, at - Math.floor((SNIPPET_CHARS - n) / 2));
  const cut = text.slice(from, from + SNIPPET_CHARS);
  return `${from > 0 ? '…' : ''}${cut}${from + SNIPPET_CHARS < text.length ? '…' : ''}`;
}

/**
 * The entries of the run's transcript (numbered as history / session.expand number them: its
 * non-empty lines) whose messages hold the query, case-insensitive; the first hit of each message.
 */
export async function searchTranscript(p: RunPorts, r: RunRecord, q: ParamsOf<'session.search'>): Promise<ReplyOf<'session.search'>> {
  const limit = Math.min(q.limit ?? DEFAULT_HITS, 20);
  const needle = q.query.toLowerCase();
  const plain = !/["\\\u0000-\u001f]/.test(needle);
  const matches: ReplyOf<'session.search'>['matches'] = [];
  let more = 0;
  let entry = 0;
  const file = p.table.store.file(r.id, 'transcript');
  const lines = readline.createInterface({ input: createReadStream(file).on('error', () => lines.close()), crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.length === 0) continue;
    const at = entry++;
    // A cheap look at the raw line first, unless the query holds what JSON escapes.
    if (plain && !line.toLowerCase().includes(needle)) continue;
    let ev: Entry;
    try {
      ev = JSON.parse(line) as Entry;
    } catch {
      continue;
    }
    const messages = (ev.t === 'reply' ? [ev.message] : Array.isArray(ev.messages) ? ev.messages : []) as Message[];
    for (const m of messages) {
      const text = textOf(m ?? {});
      const hit = text.toLowerCase().indexOf(needle);
      if (hit < 0) continue;
      if (matches.length >= limit) more++;
      else matches.push({ entry: at, t: String(ev.t), role: String(m.role), snippet: snippet(text, hit, needle.length) });
    }
  }
  return { query: q.query, matches, entries: entry, more };
}
