/**
 * The supervisor's side of the broker: one typed handler per method a running child calls
 * (progress, checkpoint, resume, result, steer.poll, spawn, wait, llm.*, child.*), in one
 * table the broker calls directly.
 *
 * Guarantees: a handler runs only after the broker verified the caller's bearer for THIS run,
 * checked the method's capability with the lease's own predicate and parsed the params with
 * the method's strict schema (broker/dispatch.ts) — so `runId` is the calling run, never a
 * value from the params, and the params have their protocol type. Every handler refuses a run
 * that is not running (`not_running`); a child acts only on its own direct children
 * (`run_not_found` otherwise, the same words as an unknown run); every reply is bounded
 * (INV-3: a big result crosses back as a pointer to its ref).
 * Threat: a hostile child naming another run, replaying calls past its budget, or sending a
 * result too big for its parent. Trusts: the broker's verification and parsing, the run table.
 * Fails closed: any doubt is a BrigError reply, never a partial effect.
 */
import { AGENT_TOOL_NAMES } from '../agents/index.js';
import { grantAllows } from '../lease/index.js';
import type { BrokerMethod, ChildRefHandle, ChildSummary, ChildSummaryWithRefs, ParamsOf, ReplyOf } from '../protocol/index.js';
import { BrigError, publicError } from '../util/errors.js';
import type { RunPorts } from './run-table.js';
import { searchTranscript, sessionStatus } from './self-view.js';
import type { RunRecord } from './types.js';

/** The broker methods the supervisor answers (the refs.* ones are ChildRefs', hello/log the broker's own). */
export const RUN_METHODS = [
  'progress',
  'checkpoint',
  'resume',
  'result',
  'steer.poll',
  'spawn',
  'wait',
  'llm.append',
  'llm.reset',
  'llm.complete',
  'child.kill',
  'child.steer',
  'child.send',
  'child.status',
  'child.explain',
  'child.history',
  'session.status',
  'session.search',
  'session.expand',
] as const satisfies readonly BrokerMethod[];
export type RunMethod = (typeof RUN_METHODS)[number];

/**
 * What a handler is handed: the calling run (verified by the broker), the method's typed
 * params, and the call's id with whether the child's client re-sends it after a reconnect
 * (`resent`): a call whose effect would double — a step counted, a child spawned, a kill
 * answered `not_running` — is answered again by its id instead of applied twice.
 */
export interface ChildCall<M extends RunMethod> {
  runId: string;
  params: ParamsOf<M>;
  callId?: string | number | null;
  resent?: boolean;
}

/** The id of a re-sent call, when there is one to match. */
const resentId = (c: { callId?: string | number | null; resent?: boolean }): string | number | undefined => (c.resent === true && c.callId !== null ? c.callId : undefined);

/** One handler per run method, in the broker's own call shape: the broker calls them directly. */
export type ChildCallHandlers = { [M in RunMethod]: (call: ChildCall<M>) => Promise<ReplyOf<M>> };

const MAX_CHECKPOINT_BYTES = 1024 * 1024;
const MAX_RESULT_BYTES = 256 * 1024;
/**
 * What a child's result may bring into its parent's context (INV-3): maxResultTokens (4000)
 * × 4 chars. A larger value stays on disk as the child's `result.json` ResultRef; the parent
 * gets its size and drills in (refs.read) instead.
 */
export const MAX_SUMMARY_RESULT_CHARS = 16_000;
/** Longest a broker `wait` blocks. */
export const MAX_CHILD_WAIT_MS = 600_000;

const CUT_HINT = 'the whole value is the result.json ref: slice it with refs.read / refs.jq';

/** The child's result as it may cross back to its parent: whole when small, else a pointer. */
export function boundedResult(result: unknown, spooledBytes?: number | null): { result: unknown; resultCut?: { chars: number; hint: string } } {
  if (spooledBytes) return { result: null, resultCut: { chars: spooledBytes, hint: CUT_HINT } };
  if (result === undefined || result === null) return { result: result ?? null };
  const chars = JSON.stringify(result).length;
  if (chars <= MAX_SUMMARY_RESULT_CHARS) return { result };
  return { result: null, resultCut: { chars, hint: CUT_HINT } };
}

/** What a parent learns of one child when a spawn or a wait returns. */
export function childSummary(c: RunRecord): ChildSummary {
  return {
    runId: c.id,
    status: c.status,
    endReason: c.endReason,
    ...boundedResult(c.result, c.resultSpooled),
    error: c.error,
    missingOutputs: c.missingOutputs,
    ...(c.partial ? { partial: true as const } : {}),
  };
}

/** The calling run, when it is running; `not_running` otherwise. */
function running(sup: RunPorts, runId: string): RunRecord {
  const r = sup.table.get(runId);
  // The child's first call can beat the engine's reply to `start` (the supervisor records
  // `running` only after it): a `starting` run whose container exists is the one calling.
  const live = r !== undefined && (r.status === 'running' || (r.status === 'starting' && sup.table.live.get(runId)?.jail !== undefined));
  if (!r || !live) throw new BrigError('not_running', `run ${runId} is not running`, { data: { status: r?.status ?? 'unknown' } });
  return r;
}

/**
 * The calling run when it is running, or when it is an agent being stopped: a kill, a timeout or
 * a spent budget saves the end first (`materializing` with its `pendingEnd`) and then gives the
 * agent SIGTERM and a grace, in which it may still make its one salvage call and send its partial
 * result — only those (llm.append, llm.complete with purpose salvage, result).
 */
function runningOrSalvaging(sup: RunPorts, runId: string): RunRecord {
  const r = sup.table.get(runId);
  if (r?.status === 'materializing' && r.kind === 'agent' && r.pendingEnd !== undefined && sup.table.live.get(runId)?.jail !== undefined) return r;
  return running(sup, runId);
}

/** One of the caller's own direct children: a run cannot reach into another subtree. */
function ownChild(sup: RunPorts, runId: string, childId: string): RunRecord {
  const child = sup.table.get(childId);
  if (!child || child.parentRunId !== runId) throw new BrigError('run_not_found', `run ${childId.slice(0, 80)} is not a child of this run`, { hint: 'Name the run ids your own spawn calls returned.' });
  return child;
}

function takeSteers(sup: RunPorts, runId: string): string[] {
  const live = sup.table.live.get(runId);
  if (!live) return [];
  const got = live.steers.splice(0, live.steers.length);
  if (got.length > 0) {
    live.taken = (live.taken ?? 0) + got.length;
    for (const fn of live.onTaken ?? []) fn();
  }
  return got;
}

function model(sup: RunPorts): NonNullable<RunPorts['llm']> {
  if (!sup.llm) throw new BrigError('model_unavailable', 'this supervisor serves no model calls');
  return sup.llm;
}

function ok<T>(r: { ok: true; value: T } | { ok: false; error: BrigError }): T {
  if (!r.ok) throw r.error;
  return r.value;
}

/** The most envelope text one wait reply carries (its line is at most MAX_REPLY_BYTES, 1 MiB). */
export const MAX_REPLY_ENVELOPE_CHARS = 600_000;

/**
 * The summary with the child's ref handles (bounded) and, once it ended, its envelope — the
 * one every face shows (INV-3: condensed, never the child's transcript) — as a spawn or a
 * wait answers it. The result value stays beside it (a script reads it as data; an agent's
 * tool shows the envelope instead).
 * `room` is the envelope text this reply may still carry.
 */
async function withRefs(sup: RunPorts, c: RunRecord, room: { chars: number } = { chars: MAX_REPLY_ENVELOPE_CHARS }): Promise<ChildSummaryWithRefs> {
  const h: { refs: ChildRefHandle[]; more: number } = sup.handlesOf ? await sup.handlesOf(c.id) : { refs: [], more: 0 };
  const base: ChildSummaryWithRefs = { ...childSummary(c), refs: h.refs, ...(h.more > 0 ? { refsMore: h.more } : {}) };
  if (c.status !== 'ended' || !sup.envelopeOf) return base;
  try {
    const envelope = await sup.envelopeOf(c.id);
    if (envelope.length > room.chars) return { ...base, envelopeError: 'not sent: this reply is full; wait for this run alone to get its envelope' };
    room.chars -= envelope.length;
    return { ...base, envelope };
  } catch (e) {
    return { ...base, envelopeError: `the envelope could not be cast: ${publicError(e).message.slice(0, 200)}` };
  }
}

export function childCallHandlers(sup: RunPorts): ChildCallHandlers {
  const { table, actions } = sup;
  return {
    async progress(call) {
      const { runId, params: p } = call;
      const r = running(sup, runId);
      // The call counted last, sent again after a reconnect (its reply was lost with the
      // connection, perhaps with the supervisor): answered again, not counted again.
      const again = resentId(call);
      if (again !== undefined && r.progressCallId === again) return { steers: takeSteers(sup, runId), stepsExecuted: r.stepsExecuted };
      // An agent's step is its model call (llm-calls.ts counts and bounds it); its progress
      // call only says where it is.
      const agent = r.kind === 'agent';
      if (!agent && r.stepsExecuted >= r.maxSteps) {
        // The step budget is spent: the script ends; the reply tells it why.
        void actions.endRun(runId, 'failed', { collect: true, error: { code: 'timeout', message: `max_steps ${r.maxSteps} spent` } });
        throw new BrigError('timeout', `max_steps ${r.maxSteps} spent`, { data: { limit: r.maxSteps, current: r.stepsExecuted + 1 } });
      }
      const line = typeof p.line === 'string' ? p.line.slice(0, 200) : r.progressLine;
      // Only a name of the closed tool set is kept: events and the ledger stay content-free (INV-7).
      const tool = typeof p.tool === 'string' && (AGENT_TOOL_NAMES as readonly string[]).includes(p.tool) ? p.tool : null;
      // Not durable (run-store.ts): a machine crash may lose the last progress line and count.
      // The call's id goes with the count it made, in one save: a restart reads both or neither.
      const counted = call.callId !== undefined && call.callId !== null ? { progressCallId: call.callId } : {};
      await table.update(runId, (x) => ({ ...x, stepsExecuted: agent ? x.stepsExecuted : x.stepsExecuted + 1, progressLine: line, activeTool: tool, lastProgressAt: table.clock.now().toISOString(), ...counted }), { durable: false });
      return { steers: takeSteers(sup, runId), stepsExecuted: agent ? r.stepsExecuted : r.stepsExecuted + 1 };
    },
    async checkpoint({ runId, params: p }) {
      running(sup, runId);
      const json = JSON.stringify(p.state ?? null);
      if (Buffer.byteLength(json) > MAX_CHECKPOINT_BYTES) {
        throw new BrigError('ref_too_large', `a checkpoint is at most ${MAX_CHECKPOINT_BYTES} bytes`, { data: { limit: MAX_CHECKPOINT_BYTES } });
      }
      // Held in memory (and written when space returns) on a full home: the run goes on.
      await table.store.write(runId, 'checkpoint', json, { hold: true });
      await table.update(runId, (x) => ({ ...x, hasCheckpoint: true, lastProgressAt: table.clock.now().toISOString() }));
      return { saved: true };
    },
    async resume({ runId }) {
      running(sup, runId);
      const buf = await table.store.read(runId, 'checkpoint');
      return { checkpoint: buf ? (JSON.parse(buf.toString('utf8')) as unknown) : null, untrusted: true };
    },
    async result({ runId, params: p }) {
      const r = runningOrSalvaging(sup, runId);
      if ('spooled' in p) {
        // The value is in the workspace (too big for a line); the collect fetches it, capped.
        const bytes = p.spooled.bytes;
        const cap = r.resultCapBytes ?? Infinity;
        if (bytes > cap) throw new BrigError('ref_too_large', `the result is ${bytes} bytes; the lease allows ${cap}`, { data: { limit: cap, current: bytes } });
        await table.update(runId, (x) => ({ ...x, result: null, resultSpooled: bytes }));
        return { saved: true, spooled: true };
      }
      const json = JSON.stringify(p.value ?? null);
      if (Buffer.byteLength(json) > MAX_RESULT_BYTES) {
        throw new BrigError('ref_too_large', `result() takes at most ${MAX_RESULT_BYTES} bytes; write bigger output to /workspace/out`, { data: { limit: MAX_RESULT_BYTES } });
      }
      const value = JSON.parse(json) as unknown;
      // An agent that ended without `finish` says so in its result: the run's result is partial.
      const partial = r.kind === 'agent' && !!value && typeof value === 'object' && (value as { partial?: unknown }).partial === true;
      await table.update(runId, (x) => ({ ...x, result: value, resultSpooled: null, ...(partial ? { partial: true } : {}) }));
      return { saved: true };
    },
    async 'steer.poll'({ runId }) {
      running(sup, runId);
      return { steers: takeSteers(sup, runId) };
    },
    async spawn(call) {
      const { runId, params: p } = call;
      const r = running(sup, runId);
      const live = table.live.get(runId);
      if (!live || !grantAllows({ caps: live.caps }, 'spawn')) throw new BrigError('capability_denied', 'the lease does not grant `spawn`', { data: { what: 'spawn' } });
      // The same call sent again after a reconnect: the child it made is the answer (waited
      // for, like the first, when synchronous), even one that ended since; never a second one.
      const again = resentId(call);
      const made = again === undefined ? undefined : table.all().find((c) => c.parentRunId === runId && c.spawnCallId === again);
      if (made) {
        const res = p.request.async === true ? ok({ ok: true as const, value: made }) : ok(await actions.whileBlocked(runId, () => actions.wait(made.id)));
        return withRefs(sup, res);
      }
      // `include_parent_history: summary` without a text: brig writes it from the conversation
      // it holds for this run (the model's summary, else a marked head/tail; never the transcript).
      const asked = p.request;
      const req = asked.include_parent_history === 'summary' && asked.parent_summary === undefined && sup.llm
        ? { ...asked, parent_summary: await sup.llm.summarize(r, sup.settings.parentSummaryMaxTokens) }
        : asked;
      // A parent blocked on its child must not hold the slot the child needs (no deadlock).
      // Attribution (reference 001): the child carries the step of its parent that spawned it.
      // The request is parsed by the supervisor's intake with the one spawn schema.
      const callId = call.callId ?? undefined;
      const spawn = () => actions.spawn(req as never, { parentRunId: runId, parentStep: r.stepsExecuted, ...(callId !== undefined ? { callId } : {}) });
      const res = req.async === true ? await spawn() : await actions.whileBlocked(runId, spawn);
      return withRefs(sup, ok(res));
    },
    async wait({ runId, params: p }) {
      running(sup, runId);
      for (const id of p.runs) ownChild(sup, runId, id);
      const timeoutMs = Math.min(p.timeoutMs ?? MAX_CHILD_WAIT_MS, MAX_CHILD_WAIT_MS);
      const deadline = Date.now() + timeoutMs;
      await actions.whileBlocked(runId, () => Promise.all(p.runs.map((id) => actions.wait(id, { timeoutMs: Math.max(0, deadline - Date.now()) }))));
      const room = { chars: MAX_REPLY_ENVELOPE_CHARS };
      const runs: ChildSummaryWithRefs[] = [];
      for (const id of p.runs) runs.push(await withRefs(sup, table.get(id)!, room));
      return { runs };
    },
    async 'llm.append'({ runId, params: p }) {
      runningOrSalvaging(sup, runId);
      return { messages: await model(sup).append(runId, p.messages) };
    },
    async 'llm.reset'({ runId, params: p }) {
      running(sup, runId);
      return { messages: await model(sup).reset(runId, p.messages) };
    },
    async 'llm.complete'({ runId, params: p }) {
      const r = runningOrSalvaging(sup, runId);
      if (r.status !== 'running' && r.status !== 'starting' && p.purpose !== 'salvage') throw new BrigError('not_running', `run ${runId} is being stopped: only its salvage call is answered`, { data: { status: r.status } });
      const llm = model(sup);
      if (p.purpose === 'salvage') {
        if (r.salvaged) throw new BrigError('budget_exceeded', 'the one salvage call of this run was made');
        await table.update(runId, (x) => ({ ...x, salvaged: true }));
      }
      return llm.complete(table.get(runId)!, p);
    },
    async 'child.kill'(call) {
      const { runId, params: p } = call;
      running(sup, runId);
      const child = ownChild(sup, runId, p.child);
      // Sent again after a reconnect, once the first one killed it: the first one's answer.
      if (resentId(call) !== undefined && child.status === 'ended' && child.killedBy === 'parent') return { runId: p.child, endReason: child.endReason };
      const k = ok(await actions.kill(p.child, { confirm: true, by: 'parent' }));
      return { runId: p.child, endReason: k.endReason };
    },
    async 'child.steer'({ runId, params: p }) {
      running(sup, runId);
      ownChild(sup, runId, p.child);
      return ok(await actions.steer(p.child, p.message, { by: 'parent' }));
    },
    async 'child.send'({ runId, params: p }) {
      running(sup, runId);
      ownChild(sup, runId, p.child);
      const { child, text, ...opts } = p;
      return ok(await actions.send(child, text, opts));
    },
    async 'child.status'({ runId, params: p }) {
      running(sup, runId);
      const child = ownChild(sup, runId, p.child);
      return { ...childSummary(child), stepsExecuted: child.stepsExecuted, tokens: child.tokens ?? null, costUsd: child.costUsd ?? null, progressLine: child.progressLine };
    },
    async 'child.explain'({ runId, params: p }) {
      running(sup, runId);
      const child = ownChild(sup, runId, p.child);
      return {
        ...childSummary(child),
        caps: [...(table.live.get(p.child)?.caps ?? [])],
        budget: child.budget ?? null,
        maxSteps: child.maxSteps,
        timeoutMs: child.timeoutMs,
        tokens: child.tokens ?? null,
        costUsd: child.costUsd ?? null,
        outputs: child.outputs.slice(0, 50),
        hint: 'refs.list / ref_* slice its outputs; status for its state; history for its transcript',
      };
    },
    async 'child.history'({ runId, params: p }) {
      running(sup, runId);
      ownChild(sup, runId, p.child);
      return ok(await actions.history(p.child, { ...(p.offset !== undefined ? { offset: p.offset } : {}), limit: Math.min(p.limit ?? 10, 20) }));
    },
    // The caller's own session, read-only: no run id is taken from the params.
    async 'session.status'({ runId }) {
      return sessionStatus(sup, running(sup, runId));
    },
    async 'session.search'({ runId, params: p }) {
      return searchTranscript(sup, running(sup, runId), p);
    },
    async 'session.expand'({ runId, params: p }) {
      running(sup, runId);
      return ok(await actions.history(runId, { ...(p.offset !== undefined ? { offset: p.offset } : {}), limit: Math.min(p.limit ?? 10, 20) }));
    },
  };
}
