/**
 * Compaction, the pure part: which recent turns survive, and the messages the conversation
 * restarts from. A tool call and its results are one turn and never split (providers reject
 * an unpaired call). The run ids of children named in the dropped turns are listed in the
 * summary message, so a compacted agent can still wait on, slice and stop them.
 */
import { fitMessage, MAX_MESSAGE_JSON_BYTES } from './bound.js';
import type { ChildInfo } from './tools/tool.js';
import type { LlmMessage } from './types.js';

export const SUMMARY_PREFIX = '[Summary of earlier work]';
export const OBJECTIVE_PREFIX = '[Objective Reinforcement]';

export const COMPACT_REQUEST =
  '[Compaction] The conversation is about to be cut to save context; your summary will replace it. ' +
  'Write a summary of the work so far for yourself to continue from, as plain text with no tool calls: ' +
  '1) the task as you understand it; 2) what is done — files written or changed, commands run, findings; ' +
  '3) what is still pending and your next step; 4) every child run id you started and its state; ' +
  '5) the files that matter.';

/** brig run ids (`r-` + 16 hex). */
const RUN_ID_RE = /\br-[0-9a-f]{16}\b/g;

/** How many tokens a message weighs, roughly (4 chars a token). */
export const estimateTokens = (m: LlmMessage): number => Math.ceil(JSON.stringify(m).length / 4);

/** Messages cut into turns: an assistant message with its tool results, or one message. */
export function groupTurns(messages: readonly LlmMessage[]): LlmMessage[][] {
  const turns: LlmMessage[][] = [];
  for (const m of messages) {
    const last = turns[turns.length - 1];
    if (m.role === 'tool' && last) last.push(m);
    else turns.push([m]);
  }
  return turns;
}

/**
 * The most recent turns worth at most `budgetTokens`, at most `maxTurns` of them. A turn with
 * a message too big to send again in one line (a huge write_file input) stops the keeping:
 * what it did is in the summary.
 */
export function chooseKept(messages: readonly LlmMessage[], budgetTokens: number, maxTurns: number): { kept: LlmMessage[]; dropped: LlmMessage[] } {
  const turns = groupTurns(messages);
  let used = 0;
  let from = turns.length;
  while (from > 0 && turns.length - from < maxTurns) {
    const t = turns[from - 1]!;
    const cost = t.reduce((n, m) => n + estimateTokens(m), 0);
    if (used + cost > budgetTokens || t.some((m) => Buffer.byteLength(JSON.stringify(m)) > MAX_MESSAGE_JSON_BYTES)) break;
    used += cost;
    from--;
  }
  // A kept part that would open with a tool result cannot happen: turns are whole.
  return { kept: turns.slice(from).flat(), dropped: turns.slice(0, from).flat() };
}

export function runIdsIn(messages: readonly LlmMessage[]): string[] {
  const ids = new Set<string>();
  for (const m of messages) {
    const texts = [m.content, ...(m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => JSON.stringify(c.input ?? null)) : [])];
    for (const t of texts) for (const x of t.matchAll(RUN_ID_RE)) ids.add(x[0]);
  }
  return [...ids];
}

/** The messages the conversation restarts from: summary, objective, then the kept turns. */
export function resetMessages(o: {
  summary: string;
  objective: string;
  dropped: readonly LlmMessage[];
  kept: readonly LlmMessage[];
  children: ReadonlyMap<string, ChildInfo>;
}): LlmMessage[] {
  const ids = [...new Set([...runIdsIn(o.dropped), ...o.children.keys()])];
  const lines = ids.map((id) => {
    const c = o.children.get(id);
    return c ? `- ${id}: ${c.status}${c.endReason ? ` (${c.endReason})` : ''}${c.async ? ', async' : ''} — ${c.task.slice(0, 120)}` : `- ${id}`;
  });
  const runs = ids.length ? `\n\nChild runs named before the cut (use these ids with wait_children, ref_* on their refs, steer_child, kill_child):\n${lines.join('\n')}` : '';
  const summary = fitMessage({ role: 'user' as const, content: `${SUMMARY_PREFIX}\n${o.summary.trim()}${runs}` });
  // The child list must survive even a summary cut for size: it goes last, so cut the summary part.
  const content = summary.content.includes(runs) ? summary.content : fitMessage({ role: 'user' as const, content: `${SUMMARY_PREFIX}\n${o.summary.trim().slice(0, 8000)}${runs}` }).content;
  return [
    { role: 'user', content },
    fitMessage({ role: 'user', content: `${OBJECTIVE_PREFIX} Your objective, unchanged: ${o.objective}\nContinue from the summary; call \`finish\` with your answer when done.` }),
    ...o.kept,
  ];
}
