/**
 * Sessions tools (reference 002): `send` a message to a running agent child, and read a
 * bounded page of a run's `history` (its transcript) on explicit request.
 *
 * Guarantees: a message is a steer — delivered at the child's next step boundary, never
 * mid-tool, never widening anything; `wait` returns the child's next reply (one that saw the
 * message); `ping-pong` is a conversation of `maxTurns` (0–5) turns, one round per send: each
 * round returns the child's reply and a conversation id, and the sender's next send with that
 * id is its answer — bounded per run, dropped when the child ends, the turns are spent or it
 * idles 10 minutes; a run that is not a running agent is refused (`not_running` /
 * `invalid_input`), an unknown or ended conversation `conversation_not_found`. History is a page
 * (≤ 50 entries, each cut to 4,000 characters) of what the supervisor served the model.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BrigError, err, ok, type Result } from '../util/errors.js';
import { steerBacklog } from './control.js';
import type { AgentReply } from './llm-calls.js';
import type { Live, RunPorts } from './run-table.js';
import type { RunRecord } from './types.js';
import { MAX_HISTORY_PAGE, MAX_SEND_TURNS, MAX_SEND_WAIT_MS, SEND_MODES, type HistoryPage, type SendMode, type SendOptions, type SendOutcome, type SendReply } from './types.js';

export { SEND_MODES, MAX_SEND_WAIT_MS, MAX_SEND_TURNS, MAX_HISTORY_PAGE } from './types.js';
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

/** How long a ping-pong conversation waits for the sender's answer before it is dropped. */
export const CONVERSATION_IDLE_MS = 10 * 60_000;
/** Open conversations one run may have at once. */
export const MAX_CONVERSATIONS_PER_RUN = 4;
const CONVERSATION_ID_RE = /^c-[0-9a-f]{16}$/;

interface Thread {
  id: string;
  runId: string;
  maxTurns: number;
  turn: number;
  touchedAt: number;
}

/**
 * The ping-pong conversations the sender holds open, one round per send: bounded per run,
 * dropped when the child ends, when the turns are spent, or when idle past CONVERSATION_IDLE_MS.
 */
export class PingPongs {
  readonly #byId = new Map<string, Thread>();

  #prune(now: number): void {
    for (const [id, t] of this.#byId) if (now - t.touchedAt > CONVERSATION_IDLE_MS) this.#byId.delete(id);
  }

  open(p: RunPorts, runId: string, maxTurns: number): Result<Thread, BrigError> {
    const now = Date.now();
    this.#prune(now);
    const mine = [...this.#byId.values()].filter((t) => t.runId === runId).length;
    if (mine >= MAX_CONVERSATIONS_PER_RUN) {
      return err(new BrigError('rate_limited', `run ${runId} has ${MAX_CONVERSATIONS_PER_RUN} ping-pong conversations open`, { hint: 'Answer one (conversation: its id) or let it end before starting another.' }));
    }
    const t: Thread = { id: `c-${randomBytes(8).toString('hex')}`, runId, maxTurns, turn: 0, touchedAt: now };
    this.#byId.set(t.id, t);
    p.table.onEnded(runId, () => this.#byId.delete(t.id));
    return ok(t);
  }

  find(id: string, runId: string): Result<Thread, BrigError> {
    this.#prune(Date.now());
    const t = typeof id === 'string' && CONVERSATION_ID_RE.test(id) ? this.#byId.get(id) : undefined;
    if (!t || t.runId !== runId) {
      return err(new BrigError('conversation_not_found', `no open ping-pong conversation ${String(id).slice(0, 40)} with run ${runId}`, { data: { conversation: String(id).slice(0, 40), runId } }));
    }
    return ok(t);
  }

  close(id: string): void {
    this.#byId.delete(id);
  }
}

function checkSend(text: string, o: SendOptions): BrigError | undefined {
  const mode = o.mode ?? (o.conversation !== undefined ? 'ping-pong' : 'fire-and-forget');
  if (!(SEND_MODES as readonly string[]).includes(mode)) return new BrigError('invalid_input', `unknown send mode ${String(mode).slice(0, 40)}`, { hint: `Modes: ${SEND_MODES.join(', ')}.` });
  if (o.conversation !== undefined && mode !== 'ping-pong') return new BrigError('invalid_input', `a conversation is answered in mode ping-pong, not ${mode}`, { data: { field: 'mode' } });
  if (typeof text !== 'string' || text.length === 0 || text.length > 64 * 1024) return new BrigError('invalid_input', 'a message is 1..65536 characters');
  // Out of bounds is refused with the bounds, never clamped (every face the same: HTTP's schema refuses it too).
  if (o.maxTurns !== undefined && !(Number.isInteger(o.maxTurns) && o.maxTurns >= 0 && o.maxTurns <= MAX_SEND_TURNS)) {
    return new BrigError('invalid_input', `max_turns ${String(o.maxTurns).slice(0, 20)} is outside 0..${MAX_SEND_TURNS}`, { data: { field: 'maxTurns', min: 0, max: MAX_SEND_TURNS }, hint: `A ping-pong conversation has 0 to ${MAX_SEND_TURNS} turns (default 3).` });
  }
  if (o.timeoutMs !== undefined && !(Number.isInteger(o.timeoutMs) && o.timeoutMs >= 1 && o.timeoutMs <= MAX_SEND_WAIT_MS)) {
    return new BrigError('invalid_input', `timeoutMs ${String(o.timeoutMs).slice(0, 20)} is outside 1..${MAX_SEND_WAIT_MS}`, { data: { field: 'timeoutMs', min: 1, max: MAX_SEND_WAIT_MS }, hint: `Wait at most ${MAX_SEND_WAIT_MS} ms per send; send again to wait longer.` });
  }
  return undefined;
}

/**
 * One send: the message is queued for the child's next step boundary; `wait` and each
 * ping-pong round then wait for the child's next reply — from a model call that started after
 * the child took the message, so the reply is one that saw it.
 */
export async function sendToRun(p: RunPorts, bus: ReplyBus, threads: PingPongs, r: RunRecord, text: string, o: SendOptions): Promise<Result<SendOutcome, BrigError>> {
  const bad = checkSend(text, o);
  if (bad) return err(bad);
  const mode: SendMode = o.mode ?? (o.conversation !== undefined ? 'ping-pong' : 'fire-and-forget');
  if (r.kind !== 'agent') return err(new BrigError('invalid_input', `run ${r.id} is a ${r.kind} child: only an agent child takes messages`, { hint: 'Use steer for a script child.' }));
  // A starting child takes it too: it is delivered at its first step boundary.
  if ((r.status !== 'running' && r.status !== 'starting') || p.table.ending.has(r.id)) {
    return err(new BrigError('not_running', `Run ${r.id} is not running (status: ${r.status}) -- cannot send`, { data: { runId: r.id, status: r.status, endReason: r.endReason } }));
  }
  const live = p.table.live.get(r.id);
  if (!live) return err(new BrigError('not_running', `run ${r.id} has no live child to take the message`));
  const backlog = steerBacklog(live.steers, r.id);
  if (backlog) return err(backlog);
  let thread: Thread | undefined;
  if (o.conversation !== undefined) {
    const t = threads.find(o.conversation, r.id);
    if (!t.ok) return t;
    thread = t.value;
  } else if (mode === 'ping-pong' && (o.maxTurns ?? 3) > 0) {
    const t = threads.open(p, r.id, o.maxTurns ?? 3);
    if (!t.ok) return t;
    thread = t.value;
  }
  const want = mode === 'fire-and-forget' || (mode === 'ping-pong' && !thread) ? 0 : 1;
  const got = await deliver(p, bus, live, r, text, want, o.timeoutMs ?? 30_000);
  const now = p.table.get(r.id)!;
  const outcome: SendOutcome = { runId: r.id, mode, delivered: 'queued', replies: got.replies, status: now.status, endReason: now.endReason, timedOut: got.timedOut };
  if (thread) {
    thread.turn += got.replies.length;
    thread.touchedAt = Date.now();
    const open = thread.turn < thread.maxTurns && (now.status === 'running' || now.status === 'starting') && !p.table.ending.has(r.id);
    if (!open) threads.close(thread.id);
    outcome.conversation = { id: thread.id, turn: thread.turn, maxTurns: thread.maxTurns, open };
  }
  return ok(outcome);
}

/** Queues the message and waits for up to `want` replies that saw it (or the run's end, or the timeout). */
async function deliver(p: RunPorts, bus: ReplyBus, live: Live, r: RunRecord, text: string, want: number, timeoutMs: number): Promise<{ replies: SendReply[]; timedOut: boolean }> {
  const replies: SendReply[] = [];
  let timedOut = false;
  const seq = (live.taken ?? 0) + live.steers.length + 1;
  /** When the child took this message (epoch ms); replies from calls started before do not count. */
  let takenAt: number | undefined;
  await new Promise<void>((resolve) => {
    let settled = false;
    const onTaken = () => {
      if (takenAt === undefined && (live.taken ?? 0) >= seq) takenAt = Date.now();
    };
    const done = (why: 'enough' | 'ended' | 'timeout') => {
      if (settled) return;
      settled = true;
      timedOut = why === 'timeout';
      unsub();
      clearTimeout(timer);
      live.onTaken?.delete(onTaken);
      // A send that is answered or timed out leaves nothing behind on a run that goes on.
      off();
      resolve();
    };
    const unsub = bus.subscribe(r.id, (rep) => {
      if (takenAt === undefined || rep.startedAt < takenAt) return;
      replies.push({ step: rep.step, text: rep.text.slice(0, REPLY_CHARS), toolCalls: rep.toolCalls.slice(0, 20) });
      if (replies.length >= want) done('enough');
    });
    (live.onTaken ??= new Set()).add(onTaken);
    const timer = setTimeout(() => done('timeout'), want === 0 ? 0 : timeoutMs);
    const off = p.table.onEnded(r.id, () => done('ended'));
    live.steers.push(text);
    p.table.emit(r, { type: 'steered', mode: 'inject', newRunId: null });
    if (want === 0) done('enough');
  });
  return { replies, timedOut: timedOut && replies.length < want };
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
