/**
 * The library's ping-pong: a conversation with a running agent child, held by the sender.
 * Each round is one `send` — the first opens the conversation, each answer names it by its
 * id — over whatever Supervisor the Brig speaks to (the daemon's HTTP API round by round, or
 * a supervisor in this process), so the callback works the same on every face.
 */
import { BrigError, err, ok, type ConverseOptions, type Result, type SendOutcome, type SendReply, type Supervisor } from '../protocol/index.js';

export async function converse(s: Pick<Supervisor, 'send'>, runId: string, text: string, o: ConverseOptions): Promise<Result<SendOutcome, BrigError>> {
  const { onReply, ...first } = o;
  if (!onReply) return s.send(runId, text, first);
  if (first.mode !== undefined && first.mode !== 'ping-pong') {
    return err(new BrigError('invalid_input', `onReply answers a ping-pong conversation, not mode ${String(first.mode).slice(0, 20)}`, { hint: 'Pass mode ping-pong (or no mode) with onReply.' }));
  }
  const replies: SendReply[] = [];
  let out = await s.send(runId, text, { ...first, mode: 'ping-pong' });
  for (;;) {
    if (!out.ok) return out;
    replies.push(...out.value.replies);
    const c = out.value.conversation;
    const last = out.value.replies.at(-1);
    if (!c?.open || !last) break;
    const answer = await onReply(last, c);
    if (typeof answer !== 'string') break;
    out = await s.send(runId, answer, { conversation: c.id, ...(first.timeoutMs !== undefined ? { timeoutMs: first.timeoutMs } : {}) });
  }
  return ok({ ...out.value, replies });
}
