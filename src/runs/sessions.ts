/**
 * Sessions tools (reference 002): `send` a message to a running agent child, and read a
 * bounded page of a run's `history` (its transcript) on explicit request.
 *
 * Guarantees: a message is a steer — delivered at the child's next step boundary, never
 * mid-tool, never widening anything; `wait` returns the child's next reply, `ping-pong` up to
 * `maxTurns` (0–5) replies, each bounded, until the child ends or the timeout; a run that is
 * not a running agent is refused (`not_running` / `invalid_input`). History is a page
 * (≤ 50 entries, each cut to 4,000 characters) of what the supervisor served the model.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { steerBacklog } from './control.js';
import type { AgentReply } from './llm-calls.js';
import type { RunPorts } from './run-table.js';
import type { RunRecord } from './types.js';
import { MAX_HISTORY_PAGE, MAX_SEND_WAIT_MS, SEND_MODES, type HistoryPage, type SendMode, type SendOptions, type SendOutcome } from './types.js';

export { SEND_MODES, MAX_SEND_WAIT_MS, MAX_HISTORY_PAGE } from './types.js';
export type { SendMode, SendOptions, SendOutcome, HistoryPage } from './types.js';
const REPLY_CHARS = 8_000;
const HISTORY_ENTRY_CHARS = 4_000;

/** Who hears of replies: the supervisor's llm service reports to this. */
export class ReplyBus {
  readonly #subs = new Map<string, Set<(r: AgentReply) => void>>();
  publish(runId: string, r: AgentReply): void {
    for (const fn of this.#subs.get(runId) ?? []) fn(r);
  }
  subscribe(runId: string, fn: (r: AgentReply) => void): () => void {
    const set = this.#subs.get(runId) ?? new Set();
    set.add(fn);
    this.#subs.set(runId, set);
    return () => {
      set.delete(fn);
      if (set.size === 0) this.#subs.delete(runId);
    };
  }
}

export async function sendToRun(p: RunPorts, bus: ReplyBus, r: RunRecord, text: string, o: SendOptions): Promise<Result<SendOutcome, BrigError>> {
  const mode = o.mode ?? 'fire-and-forget';
  if (!(SEND_MODES as readonly string[]).includes(mode)) return err(new BrigError('invalid_input', `unknown send mode ${String(mode).slice(0, 40)}`, { hint: `Modes: ${SEND_MODES.join(', ')}.` }));
  if (typeof text !== 'string' || text.length === 0 || text.length > 64 * 1024) return err(new BrigError('invalid_input', 'a message is 1..65536 characters'));
  // Out of bounds is refused with the bounds, never clamped (every face the same: HTTP's schema refuses it too).
  if (o.maxTurns !== undefined && !(Number.isInteger(o.maxTurns) && o.maxTurns >= 0 && o.maxTurns <= 5)) {
    return err(new BrigError('invalid_input', `maxTurns ${String(o.maxTurns).slice(0, 20)} is outside 0..5`, { data: { field: 'maxTurns', min: 0, max: 5 }, hint: 'ping-pong collects 0 to 5 replies (default 3).' }));
  }
  if (o.timeoutMs !== undefined && !(Number.isInteger(o.timeoutMs) && o.timeoutMs >= 1 && o.timeoutMs <= MAX_SEND_WAIT_MS)) {
    return err(new BrigError('invalid_input', `timeoutMs ${String(o.timeoutMs).slice(0, 20)} is outside 1..${MAX_SEND_WAIT_MS}`, { data: { field: 'timeoutMs', min: 1, max: MAX_SEND_WAIT_MS }, hint: `Wait at most ${MAX_SEND_WAIT_MS} ms per send; send again to wait longer.` }));
  }
  if (r.kind !== 'agent') return err(new BrigError('invalid_input', `run ${r.id} is a ${r.kind} child: only an agent child takes messages`, { hint: 'Use steer for a script child.' }));
  // A starting child takes it too: it is delivered at its first step boundary.
  if ((r.status !== 'running' && r.status !== 'starting') || p.table.ending.has(r.id)) {
    return err(new BrigError('not_running', `Run ${r.id} is not running (status: ${r.status}) -- cannot send`, { data: { runId: r.id, status: r.status, endReason: r.endReason } }));
  }
  const live = p.table.live.get(r.id);
  if (!live) return err(new BrigError('not_running', `run ${r.id} has no live child to take the message`));
  const backlog = steerBacklog(live.steers, r.id);
  if (backlog) return err(backlog);
  const want = mode === 'fire-and-forget' ? 0 : mode === 'wait' ? 1 : (o.maxTurns ?? 3);
  const timeoutMs = o.timeoutMs ?? 30_000;
  const sentAt = Date.now();
  const replies: SendOutcome['replies'] = [];
  let timedOut = false;
  await new Promise<void>((resolve) => {
    let settled = false;
    const done = (why: 'enough' | 'ended' | 'timeout') => {
      if (settled) return;
      settled = true;
      timedOut = why === 'timeout';
      unsub();
      clearTimeout(timer);
      // A send that is answered or timed out leaves nothing behind on a run that goes on.
      off();
      resolve();
    };
    // A reply counts once a model call that started after the send (the steer is delivered
    // at the step boundary before it) answers.
    const unsub = bus.subscribe(r.id, (rep) => {
      if (rep.startedAt < sentAt) return;
      replies.push({ step: rep.step, text: rep.text.slice(0, REPLY_CHARS), toolCalls: rep.toolCalls.slice(0, 20) });
      if (replies.length >= want) done('enough');
    });
    const timer = setTimeout(() => done('timeout'), want === 0 ? 0 : timeoutMs);
    const off = p.table.onEnded(r.id, () => done('ended'));
    live.steers.push(text);
    p.table.emit(r, { type: 'steered', mode: 'inject', newRunId: null });
    if (want === 0) done('enough');
  });
  const now = p.table.get(r.id)!;
  return ok({ runId: r.id, mode, delivered: 'queued', replies, status: now.status, endReason: now.endReason, timedOut: timedOut && replies.length < want });
}

export async function historyOf(p: RunPorts, r: RunRecord, o: { offset?: number; limit?: number } = {}): Promise<Result<HistoryPage, BrigError>> {
  const offset = Math.max(0, Math.floor(o.offset ?? 0));
  const limit = Math.max(1, Math.min(Math.floor(o.limit ?? 20), MAX_HISTORY_PAGE));
  const file = path.join(p.table.store.dir(r.id), 'transcript.jsonl');
  const page = await pageOfLines(file, offset, limit).catch(() => null);
  if (page === null) return err(new BrigError('ref_not_found', `run ${r.id} has no transcript`, { hint: 'Only agent children (and runs that call models) have one.' }));
  const cut = (v: unknown): unknown => {
    const s = JSON.stringify(v);
    return s.length <= HISTORY_ENTRY_CHARS ? v : { cut: true, chars: s.length, head: s.slice(0, HISTORY_ENTRY_CHARS) };
  };
  const entries = page.lines.map((l) => {
    try {
      return cut(JSON.parse(l));
    } catch {
      return { unreadable: true };
    }
  });
  return ok({ runId: r.id, offset, entries, total: page.total, more: Math.max(0, page.total - offset - entries.length) });
}

/**
 * The non-empty lines [offset, offset + limit) of a file and how many non-empty lines it has,
 * in one streamed pass: only the page is kept in memory, whatever the file's size (a transcript
 * may be 64 MiB, and a parent may page it many times at once).
 */
export async function pageOfLines(file: string, offset: number, limit: number): Promise<{ lines: string[]; total: number }> {
  const lines: string[] = [];
  let total = 0;
  let parts: Buffer[] = [];
  let nonEmpty = false;
  const endLine = () => {
    if (nonEmpty) {
      if (total >= offset && total < offset + limit) lines.push(Buffer.concat(parts).toString('utf8'));
      total++;
    }
    parts = [];
    nonEmpty = false;
  };
  const handle = await fs.open(file, 'r');
  try {
    for await (const chunk of handle.createReadStream({ highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
      let start = 0;
      for (;;) {
        const nl = chunk.indexOf(10, start);
        const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl);
        if (piece.length > 0) {
          nonEmpty = true;
          if (total >= offset && total < offset + limit) parts.push(Buffer.from(piece));
        }
        if (nl === -1) break;
        endLine();
        start = nl + 1;
      }
    }
    endLine();
  } finally {
    await handle.close();
  }
  return { lines, total };
}
