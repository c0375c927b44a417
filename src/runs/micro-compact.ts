/**
 * Tier-0 micro-compaction (reference 003, the longevity invariant): every model call, the
 * results of read-only tools older than the last `keep` such results are replaced, in what
 * the provider is sent, by a stable placeholder naming the tool and what to call to re-read
 * it. The transcript keeps the originals; the child's own conversation is untouched. A
 * placeholder is byte-stable, so once a result is elided the prompt prefix stays cacheable.
 * Pure.
 */
import type { ConversationMessage } from './model-port.js';

/** Tools whose results can be fetched again at will: eliding them loses nothing. */
export const REREADABLE_TOOLS: ReadonlySet<string> = new Set([
  'read_file', 'list_files', 'grep_files',
  'ref_read', 'ref_grep', 'ref_jq', 'ref_sql', 'ref_jsonpath',
  'list_children', 'wait_children', 'status', 'history',
]);

/** Results shorter than this are kept whatever their age: a placeholder would not be smaller. */
const MIN_ELIDE_CHARS = 400;

function brief(input: unknown): string {
  if (!input || typeof input !== 'object') return '';
  const o = input as Record<string, unknown>;
  const keys = ['ref', 'path', 'pattern', 'runIds', 'query', 'sql', 'filter'].filter((k) => o[k] !== undefined);
  return keys.map((k) => `${k}=${JSON.stringify(o[k]).slice(0, 120)}`).join(', ');
}

export function microCompact(messages: readonly ConversationMessage[], keep: number): ConversationMessage[] {
  const calls = new Map<string, { name: string; input: unknown }>();
  for (const m of messages) if (m.role === 'assistant') for (const c of m.toolCalls ?? []) calls.set(c.id, { name: c.name, input: c.input });
  const rereadable = messages
    .map((m, i) => ({ m, i }))
    .filter(({ m }) => m.role === 'tool' && REREADABLE_TOOLS.has(calls.get(m.toolCallId)?.name ?? ''));
  const elide = new Set(rereadable.slice(0, Math.max(0, rereadable.length - keep)).map(({ i }) => i));
  return messages.map((m, i) => {
    if (!elide.has(i) || m.role !== 'tool' || m.content.length < MIN_ELIDE_CHARS) return m;
    const call = calls.get(m.toolCallId)!;
    const args = brief(call.input);
    return { ...m, content: `[older result elided to save context: ${call.name}(${args}) — call it again to re-read]` };
  });
}
